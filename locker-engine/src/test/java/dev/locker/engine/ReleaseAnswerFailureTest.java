package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.spi.TemporaryStoreException;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** release() deletes the claim even when asking whether it was still ours fails: the answer never costs the delete. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReleaseAnswerFailureTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private final VirtualClock clock = new VirtualClock();
    private final FaultyStore store = new FaultyStore(new InMemoryStore("release-answer-failure"));
    private final List<Locker> lockers = new ArrayList<>();
    private final KeyColumn lock = KeyColumn.of("core", "x");

    @AfterEach
    void tearDown() {
        lockers.forEach(Locker::close);
    }

    private Locker locker(String rid) {
        Locker l = ConsistentKeyLocker.builder(store).config(LockerConfig.builder().rid(rid).expiry(EXPIRY)
                .lockWait(Duration.ofMillis(100)).retries(1).scrubExpired(false).timeSource(clock).build()).build();
        lockers.add(l);
        return l;
    }

    /**
     * Given a held lease and a store whose next read fails temporarily, release() still deletes the claim (the
     * delete itself would succeed), so another process takes the lock at once.
     */
    @Test
    void aReleaseWhoseOwnershipCheckFailsStillDeletesTheClaim() {
        Locker a = locker("a");
        Locker b = locker("b");
        Lease lease = a.acquire(lock, "job", LeaseOptions.DEFAULTS.keepAlive(false));
        store.failNextReads(1, () -> new TemporaryStoreException("read timed out"));
        lease.release(); // its answer may be false: what counts is that the claim went
        Optional<Lease> next = b.tryAcquire(lock, "next", Duration.ZERO);
        assertTrue(next.isPresent(), "the release left its claim behind: " + b.holding(lock));
        next.get().close();
    }

    /** The same failure during close() costs nothing: close never asks, it deletes. */
    @Test
    void aCloseWhoseStoreReadWouldFailDeletesTheClaim() {
        Locker a = locker("a");
        Locker b = locker("b");
        Lease lease = a.acquire(lock, "job", LeaseOptions.DEFAULTS.keepAlive(false));
        store.failNextReads(1, () -> new TemporaryStoreException("read timed out"));
        lease.close();
        store.failNextReads(0, () -> new TemporaryStoreException("unused"));
        Optional<Lease> next = b.tryAcquire(lock, "next", Duration.ZERO);
        assertTrue(next.isPresent(), "the close left its claim behind: " + b.holding(lock));
        next.get().close();
    }
}
