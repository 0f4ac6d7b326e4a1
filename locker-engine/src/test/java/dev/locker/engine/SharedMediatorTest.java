package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Lockers sharing one mediator judge each hold on its own locker's clock. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SharedMediatorTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final VirtualClock clock = new VirtualClock();

    private final InMemoryStore shared = new InMemoryStore("shared");

    private final ExecutorService pool = Executors.newCachedThreadPool();

    private final List<Locker> lockers = new ArrayList<>();

    private final KeyColumn lock = KeyColumn.of("core", "c");

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        lockers.forEach(Locker::close);
    }

    private LockerConfig.Builder config(String rid) {
        return LockerConfig.builder().rid(rid).expiry(EXPIRY).lockWait(LOCK_WAIT).timeSource(clock);
    }

    private Locker locker(KeyColumnValueStore store, LockerConfig config) {
        Locker l = ConsistentKeyLocker.builder(store).config(config).build();
        lockers.add(l);
        return l;
    }

    private Locker locker(String rid) {
        return locker(shared, config(rid).build());
    }

    /**
     * The mediator judges each hold's deadline on its own locker's monotonic clock, whose origin is arbitrary per source.
     * So a live hold is never "past its deadline" for a sharing locker on another clock, and is never taken over.
     *
     * <p>Interleaving: locker A (monotonic clock 27 years from its origin) makes the mediator; locker B, on the system
     * clock, shares it and acquires the lock; A's acquire is refused, and B's lease stays valid.
     */
    @Test
    void aSharedMediatorJudgesAnotherLockersHoldOnThatLockersClock() {
        clock.advance(Duration.ofDays(10_000)); // A's monotonic reading: 8.6e17 ns, beyond any host's uptime
        Locker a = locker("a");
        Locker b = locker(shared, config("b").timeSource(TimeSource.system()).localArbitration(a.arbitration()).build());
        Lease held = b.acquire(lock, "b");
        List<LockLost> told = new CopyOnWriteArrayList<>();
        held.onLost(told::add);
        Duration left = held.remaining();
        assertTrue(held.isValid());
        try {
            a.acquire(lock, "a").close();
        } catch (LockingException refusedByTheStore) {
            // the store refuses A (B's claim is live); what matters is what the mediator did to B on the way
        }
        assertTrue(held.isValid(), "B's lease is still valid: its deadline, on its own clock, was " + left
                + " away just before A's attempt, a fraction of a second long; B was told " + told);
        held.close();
    }

    /**
     * A mediator made by a locker on the system clock is shared with a locker on a virtual clock, far from the system's
     * origin. The virtual-clock locker's live hold is judged on its own clock, so the other locker does not take it over.
     */
    @Test
    void aSharedMediatorJudgesEachHoldOnItsOwnLockersClock() {
        Locker sys = locker(shared, LockerConfig.builder().rid("sys").expiry(EXPIRY).lockWait(LOCK_WAIT)
                .localWait(Duration.ofMillis(50)).timeSource(TimeSource.system()).build());
        Locker virt = locker(shared, config("virt").localArbitration(sys.arbitration()).build());
        Lease held = virt.acquire(lock, "held");
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                () -> sys.acquire(lock, "contender"));
        assertTrue(e.getMessage().contains("in this process"), e.getMessage());
        assertTrue(held.isValid());
        held.check();
        held.close();
    }
}
