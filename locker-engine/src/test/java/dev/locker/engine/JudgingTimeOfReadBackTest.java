package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.StoreTransaction;
import dev.locker.testkit.Interleavings;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;

/** A read-back's claims are judged at a time no later than the read, so a claim renewed since is never taken. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class JudgingTimeOfReadBackTest {

    private final VirtualClock clock = new VirtualClock();
    private final PausingStore store = new PausingStore(new InMemoryStore("shared"));
    private final List<Locker> lockers = new ArrayList<>();
    private final KeyColumn lock = KeyColumn.of("vertex:42", "name");

    @AfterEach
    void tearDown() {
        lockers.forEach(Locker::close);
    }

    private Locker locker(String rid) {
        LockerConfig config = LockerConfig.builder().rid(rid).expiry(Duration.ofSeconds(30))
                .lockWait(Duration.ofMillis(100)).timeSource(clock).build();
        Locker l = ConsistentKeyLocker.builder(store).config(config).build();
        lockers.add(l);
        return l;
    }

    /**
     * A holds the lock. C reads the row back, then its thread pauses 1.5 s (a GC) before reading the clock. During the
     * pause A renews its claim in time. C must not judge A's claim by the expiry it read, now passed, and take the lock.
     */
    @Test
    void aClaimRenewedWhileACheckerPausedAfterItsReadBackIsNotTakenOver() {
        Locker a = locker("a");
        Locker c = locker("c");
        Object ta = new Object();
        Interleavings.take(a, lock, ta);
        clock.advance(Duration.ofMillis(28_900)); // A's claim expires 30 s after it was written: 1 s left
        store.afterNextRead(() -> {
            clock.advance(Duration.ofMillis(400)); // C's thread is paused right after its read-back returned
            a.renewLocks(ta); // A renews in time: its claim now lives until 59.5 s
            clock.advance(Duration.ofMillis(1_100)); // the pause ends past the expiry C read
        });
        Object tc = new Object();
        long tokenC;
        try {
            tokenC = Interleavings.take(c, lock, tc);
        } catch (TemporaryLockingException refused) {
            return; // correct: A still holds
        }
        assertFalse(Interleavings.believesItHolds(a, lock, ta, clock) && Interleavings.believesItHolds(c, lock, tc, clock),
                "TWO HOLDERS: A (renewed during C's pause, " + Duration.ofNanos(a.status(lock, ta).orElseThrow()
                        .deadlineNanos() - clock.nanoTime()) + " left) and C (token " + tokenC + "), which judged the "
                        + "claim it had read before the pause at the time after it");
    }

    /** A real store that runs an action once, right after the next read returned, on the reading thread. */
    private static final class PausingStore implements KeyColumnValueStore {

        private final KeyColumnValueStore real;
        private Runnable afterNextRead;

        PausingStore(KeyColumnValueStore real) {
            this.real = real;
        }

        synchronized void afterNextRead(Runnable action) {
            afterNextRead = action;
        }

        private synchronized Runnable takeAction() {
            Runnable r = afterNextRead;
            afterNextRead = null;
            return r;
        }

        @Override
        public String name() {
            return real.name();
        }

        @Override
        public List<Entry> getSlice(byte[] key, byte[] start, byte[] end, StoreTransaction tx) {
            List<Entry> read = real.getSlice(key, start, end, tx);
            Runnable action = takeAction();
            if (action != null) {
                action.run();
            }
            return read;
        }

        @Override
        public void mutate(byte[] key, List<Entry> additions, List<byte[]> deletions, StoreTransaction tx) {
            real.mutate(key, additions, deletions, tx);
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
}
