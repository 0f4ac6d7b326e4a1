package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TimeSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** A claim is judged by its expiry only on the clock it was written on, whatever wraps or offsets that clock. */
class FileClockDomainTest {

    private final FileFixture fixture = new FileFixture("clock-domain");
    private final Path dir = fixture.dir();

    @AfterEach
    void cleanUp() throws Exception {
        fixture.close();
    }

    /**
     * A process in another time namespace reads the monotonic clock with an offset under the same boot id. It must not
     * judge our live claim expired and take the lock.
     */
    @Test
    void aProcessInAnotherTimeNamespaceCannotTakeALiveHoldersLock() throws Exception {
        Process probe = new ProcessBuilder("unshare", "-T", "--monotonic", "1", "--fork", "true")
                .redirectErrorStream(true).start();
        assumeTrue(probe.waitFor(10, TimeUnit.SECONDS) && probe.exitValue() == 0, "unshare -T works here (root, Linux >= 5.6)");
        KeyColumn lock = KeyColumn.named("time-namespace");
        try (Locker parent = fixture.open("parent", Duration.ofSeconds(60)); Lease lease = parent.acquire(lock, "parent")) {
            String taken = fixture.start("take", lock, List.of("unshare", "-T", "--monotonic", "100000", "--fork")).expect("");
            assertTrue(lease.isValid(), "our lease is valid");
            assertTrue(taken.startsWith("BUSY"), "a process in a time namespace took the lock we hold: " + taken);
        }
    }

    /**
     * A time source that wraps the system clock (metrics, tracing) is the system clock. A three-phase claim never
     * renewed through it expires for a locker on the plain system clock.
     */
    @Test
    void aClaimWrittenThroughAWrappedSystemClockExpiresForOtherLockers() throws Exception {
        TimeSource system = TimeSource.system();
        TimeSource wrapped = new TimeSource() {
            @Override
            public Instant now() {
                return system.now();
            }

            @Override
            public long nanoTime() {
                return system.nanoTime();
            }

            @Override
            public void sleep(Duration d) throws InterruptedException {
                system.sleep(d);
            }
        };
        KeyColumn lock = KeyColumn.named("clock-domains");
        Object tx = new Object();
        try (Locker a = FileLocker.builder(dir).config(LockerConfig.builder().rid("wrapped")
                .expiry(Duration.ofMillis(300)).timeSource(wrapped).build()).build();
             Locker b = fixture.open("system", Duration.ofSeconds(60))) {
            a.writeLock(lock, tx); // three phases, never renewed: the claim expires 300 ms later
            a.checkLocks(tx);
            Optional<Lease> taken = b.tryAcquire(lock, "after the expiry", Duration.ofSeconds(5));
            assertTrue(taken.isPresent(), "a's claim expired 300 ms after it was written, yet b waited 5 s in vain");
            taken.get().close();
        }
    }
}
