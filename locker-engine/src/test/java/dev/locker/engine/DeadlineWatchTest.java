package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TimeSource;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.Field;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The deadline watch never overrules a renewal that succeeded, and forgets a closed lease at once. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DeadlineWatchTest {

    private final List<Locker> lockers = new ArrayList<>();

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        lockers.forEach(Locker::close);
    }

    private Locker locker(String name, LockerConfig.Builder config) {
        Locker l = ConsistentKeyLocker.builder(new InMemoryStore(name)).config(config.rid(name).build()).build();
        lockers.add(l);
        return l;
    }

    private static Object field(Class<?> owner, String name, Object of) throws Exception {
        Field f = owner.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(of);
    }

    private final VirtualClock clock = new VirtualClock();

    private final InMemoryStore shared = new InMemoryStore("shared");

    private final ExecutorService pool = Executors.newCachedThreadPool();

    private final KeyColumn lock = KeyColumn.of("vertex:42", "name");

    private Locker locker(KeyColumnValueStore store, LockerConfig config) {
        Locker l = ConsistentKeyLocker.builder(store).config(config).build();
        lockers.add(l);
        return l;
    }

    private LockerConfig.Builder config(String rid, Duration expiry, Duration lockWait, TimeSource time) {
        return LockerConfig.builder().rid(rid).expiry(expiry).lockWait(lockWait).timeSource(time);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** A clock that parks one chosen thread (by name prefix) on its first nanoTime() after {@link #arm()}. */
    static final class TrapClock implements TimeSource {
        private final VirtualClock clock;
        private final String threadPrefix;
        private volatile boolean armed;
        private final CountDownLatch parked = new CountDownLatch(1);
        private final CountDownLatch released = new CountDownLatch(1);

        TrapClock(VirtualClock clock, String threadPrefix) {
            this.clock = clock;
            this.threadPrefix = threadPrefix;
        }

        void arm() {
            armed = true;
        }

        void awaitParked() throws InterruptedException {
            assertTrue(parked.await(30, TimeUnit.SECONDS), "the watchdog never ran");
        }

        void release() {
            released.countDown();
        }

        @Override
        public Instant now() {
            return clock.now();
        }

        @Override
        public long nanoTime() {
            long t = clock.nanoTime();
            if (armed && Thread.currentThread().getName().startsWith(threadPrefix)) {
                armed = false;
                parked.countDown();
                try {
                    released.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return t;
        }

        @Override
        public void sleep(Duration d) throws InterruptedException {
            clock.sleep(d);
        }
    }

    /**
     * Every lease is watched: each acquire puts its hold in the deadline-watch timer, due at its deadline less a margin.
     * Closing a lease cancels both its renewal and its watch entry. So closed leases leave no dead hold in either heap,
     * however long their expiry.
     */
    @Test
    void closedLeasesLeaveTheDeadlineWatchAtOnce() throws Exception {
        Locker l = locker("watch", LockerConfig.builder().expiry(Duration.ofMinutes(10)).lockWait(Duration.ofMillis(1)));
        int n = 200;
        for (int i = 0; i < n; i++) {
            try (Lease lease = l.acquire(KeyColumn.named("watched-" + i), "watched")) {
                assertTrue(lease.fencingToken() > 0);
            }
        }
        Object keepAlive = field(Background.class, "keepAlive", field(LockerEngine.class, "background", l));
        Timer<?> renewals = (Timer<?>) field(KeepAlive.class, "scheduler", keepAlive);
        Timer<?> watch = (Timer<?>) field(KeepAlive.class, "watchdogScheduler", keepAlive);
        assertEquals(0, renewals.size(), "renewal entries of closed leases");
        assertEquals(0, watch.size(), "deadline-watch entries (each a dead Hold, its tx and lock) of " + n
                + " closed leases");
    }

    /**
     * Virtual clock. A holds (E = 30 s, deadline 29.6 s, watchdog margin 3 s). At 26.7 s the watchdog reads the hold's
     * state and is preempted before it compares. The holder's renew() then succeeds: new deadline 56.3 s.
     * The watchdog resumes, but it marks lost only the state it judged. The renewed lease stays valid, and nothing is told.
     */
    @Test
    void theWatchdogNeverOverrulesARenewalThatSucceededWhileItJudged() throws Exception {
        TrapClock trap = new TrapClock(clock, "locker-deadline-watch");
        Locker a = locker(shared, config("a", Duration.ofSeconds(30), Duration.ofMillis(100), trap).build());
        Lease lease = a.acquire(lock, "job");
        clock.advance(Duration.ofMillis(26_600)); // now 26.7 s: 2.9 s before the deadline, inside the 3 s margin
        trap.arm();
        List<LockLost> told = new CopyOnWriteArrayList<>();
        lease.onLost(told::add); // (re)arms the watchdog: it fires at once
        trap.awaitParked();
        lease.renew(); // succeeds: the lease is good for another 29.6 s
        trap.release();
        sleep(500);
        assertTrue(lease.isValid() && told.isEmpty(), "renew() succeeded at 26.7 s (new deadline 56.3 s), yet the "
                + "watchdog then marked the lease lost: valid=" + lease.isValid() + ", told " + told);
    }
}
