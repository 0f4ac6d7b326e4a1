package dev.locker.shedlock;

import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * A child JVM that takes ShedLock locks, then unlocks, extends or keeps each, prints HELD and waits to be killed.
 * It exits by itself when its stdin closes, so it cannot outlive the test JVM that started it.
 *
 * <p>Each argument is one lock: {@code URI|name|lockAtMostFor ms|lockAtLeastFor ms|action}, where the action is
 * {@code unlock}, {@code hold} or {@code extend:MS} (a new lockAtMostFor). Locks of one URI share a provider.
 */
public final class HoldingProcess {

    public static void main(String[] args) throws Exception {
        Map<String, LockerLockProvider> providers = new HashMap<>();
        for (String arg : args) {
            String[] f = arg.split("\\|", -1);
            LockerLockProvider provider = providers.computeIfAbsent(f[0], LockerLockProvider::open);
            SimpleLock lock = provider.lock(new LockConfiguration(ClockProvider.now(), f[1],
                    Duration.ofMillis(Long.parseLong(f[2])), Duration.ofMillis(Long.parseLong(f[3]))))
                    .orElseThrow(() -> new IllegalStateException(f[1] + " is taken"));
            String action = f[4];
            if (action.equals("unlock")) {
                lock.unlock();
            } else if (action.startsWith("extend:")) {
                lock.extend(Duration.ofMillis(Long.parseLong(action.substring("extend:".length()))), Duration.ZERO)
                        .orElseThrow(() -> new IllegalStateException(f[1] + " could not be extended"));
            }
        }
        System.out.println("HELD");
        System.out.flush();
        while (System.in.read() >= 0) {
            // wait for the kill; a closed stdin means the test JVM is gone
        }
        System.exit(0);
    }
}
