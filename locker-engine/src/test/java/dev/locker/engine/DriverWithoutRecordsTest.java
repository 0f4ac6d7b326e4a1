package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockerConfig;
import dev.locker.spi.LockDriver;
import dev.locker.spi.Waiting;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A driver that declares no records still locks and force-releases; run-once is refused and no record is read. */
class DriverWithoutRecordsTest {

    /** The wait-and-read-back driver with its operations only: it declares neither records nor a wait queue. */
    private static final class OperationsOnly implements LockDriver<ConsistentKeyClaim> {
        private final ConsistentKeyDriver inner;

        OperationsOnly(ConsistentKeyDriver inner) {
            this.inner = inner;
        }

        @Override
        public ConsistentKeyClaim write(KeyColumn lock, LockOwner owner, Duration expiry, Waiting waiting) {
            return inner.write(lock, owner, expiry, waiting);
        }

        @Override
        public ConsistentKeyClaim verify(KeyColumn lock, ConsistentKeyClaim claim) {
            return inner.verify(lock, claim);
        }

        @Override
        public ConsistentKeyClaim renew(KeyColumn lock, ConsistentKeyClaim claim, Duration expiry) {
            return inner.renew(lock, claim, expiry);
        }

        @Override
        public void release(KeyColumn lock, ConsistentKeyClaim claim) {
            inner.release(lock, claim);
        }

        @Override
        public Optional<LockInfo> readHolder(KeyColumn lock) {
            return inner.readHolder(lock);
        }

        @Override
        public boolean remove(KeyColumn lock, OptionalLong expectedToken, byte[] record) {
            return inner.remove(lock, expectedToken, record);
        }

        @Override
        public LockPage list(byte[] keyPrefix, int limit, String cursor) {
            return inner.list(keyPrefix, limit, cursor);
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    /** The engine over that driver. */
    private static final class BareLocker extends LockerEngine<ConsistentKeyClaim> {
        BareLocker(LockerConfig config) {
            super(config, null, running -> new OperationsOnly(new ConsistentKeyDriver(running,
                    new InMemoryStore("without-records"), true, 16)));
        }
    }

    private final VirtualClock clock = new VirtualClock();
    private final KeyColumn job = KeyColumn.of("jobs", "nightly");

    private BareLocker locker() {
        return new BareLocker(LockerConfig.builder().rid("a").expiry(Duration.ofSeconds(10)).scrubExpired(false)
                .timeSource(clock).build());
    }

    @Test
    void runOnceIsRefusedBeforeAnyClaimIsWritten() {
        try (BareLocker locker = locker()) {
            assertThrows(UnsupportedOperationException.class, () -> locker.runOnce(job, "nightly", lease -> { }));
            assertTrue(locker.holder(job).isEmpty(), "no claim was left behind");
            assertTrue(locker.lastRun(job).isEmpty());
        }
    }

    @Test
    void aForcedReleaseRemovesTheHoldersClaimAndLeavesNoRecord() {
        try (BareLocker locker = locker()) {
            Lease lease = locker.acquire(job, "holder").keepAlive(false);
            assertEquals(lease.fencingToken(), locker.holding(job).orElseThrow().fencingToken());

            assertTrue(locker.forceRelease(job, "operator"));

            assertFalse(locker.holder(job).isPresent(), "the claim was removed");
            assertTrue(locker.lastForcedRelease(job).isEmpty(), "no record was written or read");
        }
    }
}
