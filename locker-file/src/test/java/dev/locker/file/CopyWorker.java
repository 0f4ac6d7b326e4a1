package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One copy of the library at work, for {@link FileLockerTest}: called in this class loader and, through reflection, in
 * another one, with JDK counters (the same objects for both copies).
 */
public final class CopyWorker {

    private CopyWorker() {
    }

    /**
     * Takes and releases {@code lock} {@code rounds} times; {@code inside} counts the holders (more than one at a time
     * is a violation), {@code errors} counts failures other than "busy".
     */
    public static void churn(Path dir, String lock, int rounds, AtomicInteger inside, AtomicInteger violations,
            AtomicInteger taken, AtomicInteger errors) {
        try (Locker locker = FileLocker.builder(dir).config(LockerConfig.builder().rid("copy")
                .expiry(Duration.ofSeconds(30)).build()).build()) {
            for (int i = 0; i < rounds; i++) {
                try {
                    Optional<Lease> lease = locker.tryAcquire(KeyColumn.named(lock), "copy", Duration.ofSeconds(5));
                    if (lease.isEmpty()) {
                        continue;
                    }
                    try (Lease l = lease.get()) {
                        if (inside.incrementAndGet() != 1) {
                            violations.incrementAndGet();
                        }
                        taken.incrementAndGet();
                        inside.decrementAndGet();
                    }
                } catch (TemporaryLockingException busy) {
                    // the other copy held it too long: not an error
                } catch (RuntimeException e) {
                    errors.incrementAndGet();
                    e.printStackTrace();
                }
            }
        }
    }
}
