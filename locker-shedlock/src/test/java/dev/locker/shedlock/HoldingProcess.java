package dev.locker.shedlock;

import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;

import java.time.Duration;

/**
 * A child JVM that takes one ShedLock lock, then unlocks it, extends it or keeps it, prints HELD and waits to be
 * killed. It exits by itself when its stdin closes, so it cannot outlive the test JVM that started it.
 *
 * <p>Arguments: URI, lock name, lockAtMostFor ms, lockAtLeastFor ms, and {@code unlock}, {@code hold} or
 * {@code extend:MS} (a new lockAtMostFor).
 */
public final class HoldingProcess {

    public static void main(String[] args) throws Exception {
        LockerLockProvider provider = LockerLockProvider.open(args[0]);
        SimpleLock lock = provider.lock(new LockConfiguration(ClockProvider.now(), args[1],
                Duration.ofMillis(Long.parseLong(args[2])), Duration.ofMillis(Long.parseLong(args[3]))))
                .orElseThrow(() -> new IllegalStateException(args[1] + " is taken"));
        String action = args[4];
        if (action.equals("unlock")) {
            lock.unlock();
        } else if (action.startsWith("extend:")) {
            lock.extend(Duration.ofMillis(Long.parseLong(action.substring("extend:".length()))), Duration.ZERO)
                    .orElseThrow(() -> new IllegalStateException(args[1] + " could not be extended"));
        }
        System.out.println("HELD " + args[1]);
        System.out.flush();
        while (System.in.read() >= 0) {
            // wait for the kill; a closed stdin means the test JVM is gone
        }
        System.exit(0);
    }
}
