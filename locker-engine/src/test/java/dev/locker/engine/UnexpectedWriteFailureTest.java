package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.StoreTransaction;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A claim write that reached the store and then failed with an unexpected type is withdrawn, not left to expire. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class UnexpectedWriteFailureTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private final VirtualClock clock = new VirtualClock();
    private final LandsThenFails store = new LandsThenFails(new InMemoryStore("unexpected-write-failure"));
    private final List<Locker> lockers = new ArrayList<>();
    private final KeyColumn lock = KeyColumn.of("core", "x");

    /** A store whose next claim write lands, then throws a chosen failure: the reply was lost on the way back. */
    private static final class LandsThenFails implements KeyColumnValueStore {
        private final KeyColumnValueStore real;
        private final AtomicReference<Throwable> afterNextWrite = new AtomicReference<>();

        LandsThenFails(KeyColumnValueStore real) {
            this.real = real;
        }

        void failAfterNextWrite(Throwable t) {
            afterNextWrite.set(t);
        }

        @Override
        public String name() {
            return real.name();
        }

        @Override
        public List<Entry> getSlice(byte[] key, byte[] start, byte[] end, StoreTransaction tx) {
            return real.getSlice(key, start, end, tx);
        }

        @Override
        public void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions, StoreTransaction tx) {
            real.mutate(key, additions, deletions, tx);
            Throwable t = additions.isEmpty() ? null : afterNextWrite.getAndSet(null);
            if (t instanceof RuntimeException) {
                throw (RuntimeException) t;
            }
            if (t instanceof Error) {
                throw (Error) t;
            }
        }

        @Override
        public List<byte[]> getKeys(byte[] keyPrefix, byte[] startAfter, int limit, StoreTransaction tx) {
            return real.getKeys(keyPrefix, startAfter, limit, tx);
        }

        @Override
        public StoreTransaction beginTransaction() {
            return real.beginTransaction();
        }

        @Override
        public void close() {
            real.close();
        }
    }

    @AfterEach
    void tearDown() {
        lockers.forEach(Locker::close);
    }

    private Locker locker(String rid) {
        Locker l = ConsistentKeyLocker.builder(store).config(LockerConfig.builder().rid(rid).expiry(EXPIRY)
                .lockWait(Duration.ofMillis(100)).scrubExpired(false).timeSource(clock).build()).build();
        lockers.add(l);
        return l;
    }

    /** Another process takes the lock at once: fails the test, naming the claim left, if it cannot. */
    private void freeForOthers() {
        Locker b = locker("b");
        Optional<Lease> next = b.tryAcquire(lock, "next", Duration.ZERO);
        assertTrue(next.isPresent(), "the failed acquire left a claim behind: " + b.holding(lock));
        next.get().close();
    }

    @Test
    void aClaimWriteThatLandedThenFailedWithARuntimeExceptionIsWithdrawn() {
        Locker a = locker("a");
        store.failAfterNextWrite(new IllegalStateException("connection reset after the request was sent"));
        assertThrows(RuntimeException.class, () -> a.acquire(lock, "its reply is lost"));
        freeForOthers();
    }

    @Test
    void aClaimWriteThatLandedThenFailedWithAnErrorIsWithdrawn() {
        Locker a = locker("a");
        store.failAfterNextWrite(new NoClassDefFoundError("a class of the store's client, loaded after the send"));
        assertThrows(NoClassDefFoundError.class, () -> a.acquire(lock, "its reply is lost"));
        freeForOthers();
    }

    /** The failure the store declares for a lost reply is withdrawn already: the lock is free at once. */
    @Test
    void aClaimWriteThatLandedThenFailedTemporarilyIsWithdrawn() {
        Locker a = locker("a");
        store.failAfterNextWrite(new dev.locker.spi.TemporaryStoreException("timed out after the request was sent"));
        try (Lease lease = a.acquire(lock, "retried")) {
            assertTrue(lease.isValid(), "the retry took the lock");
        }
        freeForOthers();
    }
}
