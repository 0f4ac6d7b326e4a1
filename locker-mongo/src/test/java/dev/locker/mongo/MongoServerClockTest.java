package dev.locker.mongo;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.testkit.FaultProxy;
import dev.locker.testkit.OffsetClock;
import dev.locker.testkit.VirtualClock;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

import static dev.locker.mongo.MongoFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The estimate of the server's clock: skew, drift, suspends and lost re-measures never make a second holder. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class MongoServerClockTest extends MongoScenarios {

    /**
     * B measured the server's clock a day ago, and its monotonic clock runs 100 ppm slow. The expiry B writes must not
     * be outlived by its own deadline: a correct A takes no claim B still believes in.
     */
    @Test
    void anAgedServerClockEstimateOfADriftingHostMakesNoSecondHolder() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(30);
        MongoLocker b = open(config("b", expiry, new DriftingClock(clock, 100)).build(), Duration.ZERO);
        clock.advance(Duration.ofDays(1));
        MongoLocker a = open(config("a", expiry, clock).build(), Duration.ZERO);
        KeyColumn lock = lock("drift");

        Lease bLease = b.acquire(lock, "B's estimate is a day old").keepAlive(false);
        clock.advance(Duration.ofSeconds(22));
        assertTrue(bLease.isValid(), "B's own deadline has not passed: " + bLease.remaining());
        Lease aLease;
        try {
            aLease = a.acquire(lock, "A with a fresh estimate").keepAlive(false);
        } catch (TemporaryLockingException refused) {
            return; // sound: A sees B's claim live
        }
        assertFalse(bLease.isValid() && aLease.isValid(), "two holders: B (token " + bLease.fencingToken()
                + ", valid for " + bLease.remaining() + ") and A (token " + aLease.fencingToken() + ", valid for "
                + aLease.remaining() + "); the document B wrote: " + fixture.rawDoc(lock).toJson());
    }

    /**
     * Wall clocks an hour ahead and an hour behind (the monotonic clock right) make no second holder, and no
     * lower token. The estimate of the server's clock is measured, so neither takes a live claim; both refuse to take
     * over an expired one (skew beyond maxClockSkew); a correct locker takes it over with a higher token. A wall-clock
     * step of the holder while it holds changes neither its deadline nor what it wrote.
     */
    @Test
    void wallClockSkewEitherWayMakesNoSecondHolder() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        OffsetClock behind = new OffsetClock(clock, Duration.ofHours(-1));
        OffsetClock ahead = new OffsetClock(clock, Duration.ofHours(1));
        MongoLocker slow = open(config("behind", expiry, behind).build(), Duration.ZERO);
        MongoLocker fast = open(config("ahead", expiry, ahead).build(), Duration.ZERO);
        MongoLocker right = open(config("right", expiry, clock).build(), Duration.ZERO);
        KeyColumn lock = lock("skew");

        Lease held = slow.acquire(lock, "a free lock, taken with a wrong wall clock").keepAlive(false);
        long first = held.fencingToken();
        behind.step(Duration.ofHours(3)); // NTP fixes it (and overshoots) while it holds
        clock.advance(Duration.ofSeconds(5));
        assertTrue(held.isValid());
        assertThrows(TemporaryLockingException.class, () -> fast.acquire(lock, "ahead: live on the server"));
        assertThrows(TemporaryLockingException.class, () -> right.acquire(lock, "live"));
        held.renew();
        clock.advance(Duration.ofSeconds(9));
        assertTrue(held.isValid(), "renewed in place");
        assertThrows(TemporaryLockingException.class, () -> right.acquire(lock, "renewed: still live"));
        clock.advance(expiry.plusSeconds(1));
        assertFalse(held.isValid());
        TemporaryLockingException refused = assertThrows(TemporaryLockingException.class,
                () -> fast.acquire(lock, "ahead: must not judge the claim dead"));
        assertTrue(refused.getMessage().contains("maxClockSkew"), refused.getMessage());
        try (Lease next = right.acquire(lock, "takes over the expired claim")) {
            assertTrue(next.fencingToken() > first, first + " then " + next.fencingToken());
            assertThrows(ExpiredLockException.class, held::renew);
        }
    }

    /**
     * A host suspend (the monotonic clock stops, the local wall clock and the server's go on) is caught by the
     * offset move: the read measures again; and when that re-measure fails (client closed), the move is in the
     * uncertainty, so the estimate is never off by more than it says. In normal operation reads cost no round trip:
     * a thousand reads over 100 s of virtual time send no command.
     */
    @Test
    void aSuspendIsCaughtByTheMoveAndAFailedReMeasureCountsItAsUncertainty() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        java.util.concurrent.atomic.AtomicInteger measures = new java.util.concurrent.atomic.AtomicInteger();
        com.mongodb.event.CommandListener log = new com.mongodb.event.CommandListener() {
            @Override
            public void commandStarted(com.mongodb.event.CommandStartedEvent e) {
                if (e.getCommandName().equalsIgnoreCase("isMaster") || e.getCommandName().equals("hello")) {
                    measures.incrementAndGet();
                }
            }
        };
        com.mongodb.client.MongoClient client = com.mongodb.client.MongoClients.create(
                com.mongodb.MongoClientSettings.builder()
                        .applyConnectionString(new com.mongodb.ConnectionString(mongo.uri()))
                        .addCommandListener(log).build());
        try {
            ServerClock sc = new ServerClock(clock, client.getDatabase("admin"), Duration.ofSeconds(5),
                    Duration.ofSeconds(30));
            sc.measure();
            int sentAfterMeasure = measures.get();
            for (int i = 0; i < 1000; i++) {
                clock.advance(Duration.ofMillis(100));
                ServerClock.Reading r = sc.read();
                assertTrue(error(r, clock).compareTo(r.uncertainty()) <= 0, "error within uncertainty");
            }
            assertEquals(sentAfterMeasure, measures.get(), "no synchronous re-measure in normal operation");

            clock.stepWallClock(Duration.ofMinutes(10)); // suspended: wall clocks (ours, the server's) go on
            ServerClock.Reading r = sc.read();
            assertTrue(error(r, clock).compareTo(r.uncertainty()) <= 0, "re-measured after a suspend: error "
                    + error(r, clock) + ", uncertainty " + r.uncertainty());
            assertTrue(measures.get() > sentAfterMeasure, "one round trip for the suspend");

            clock.stepWallClock(Duration.ofMinutes(10)); // suspended again, and now the server cannot be reached
            client.close();
            r = sc.read();
            assertTrue(error(r, clock).compareTo(r.uncertainty()) <= 0, "unmeasured after a suspend: error "
                    + error(r, clock) + " must be within the uncertainty " + r.uncertainty());
        } finally {
            client.close();
        }
    }

    /**
     * A's host is suspended between its two readings and the re-measure's reply is lost, so the expiry is written from
     * a reading 10 s uncertain. A's validity allows for that uncertainty, so B takes no claim A still believes in.
     */
    @Test
    void theDeadlineAllowsForTheUncertaintyOfTheReadingTheExpiryWasWrittenFrom() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        SuspendingClock aClock = new SuspendingClock(clock);
        Duration expiry = Duration.ofSeconds(30);
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port())) {
            MongoLocker a = fixture.openThrough(proxy.address(), config("a", expiry, aClock).retries(1).build(), null);
            MongoLocker b = fixture.openDirect(config("b", expiry, clock).build());
            a.acquire(lock("warm-up"), "pools a connection").close();
            KeyColumn lock = lock("suspended");
            aClock.armAtTheRequestsReading(() -> {
                clock.stepWallClock(Duration.ofSeconds(10)); // suspended between A's two readings
                proxy.cutRepliesToRequestsCarrying("isMaster", 1);             // and the re-measure's reply is lost
            });
            try (Lease mine = a.acquire(lock, "A")) {
                assertEquals(1, proxy.cutReplies(), "the re-measure's reply was cut");
                Document doc = fixture.rawDoc(lock);
                // the deadline allows for the 10 s move, so A believes no longer than the written expiry lets it
                assertTrue(mine.remaining().compareTo(expiry.minusSeconds(10)) <= 0, "A's validity allows for the "
                        + "uncertain reading: " + mine.remaining());
                clock.advance(Duration.ofSeconds(21));
                Lease theirs = null;
                try {
                    theirs = b.acquire(lock, "B");
                } catch (TemporaryLockingException refused) {
                    return; // sound: B refused while A's lease is valid
                }
                try {
                    assertTrue(!mine.isValid(), "two holders: A's lease valid (remaining " + mine.remaining()
                            + ") while B acquired (token " + theirs.fencingToken() + "); A's grant wrote " + doc.toJson()
                            + " at true time " + clock.now().minusSeconds(21));
                } finally {
                    theirs.close();
                }
            }
        }
    }

    /**
     * A time source whose wall clock is right but whose monotonic clock runs {@code ppm} parts per million slow
     * (an undisciplined crystal; the same happens, unboundedly, to CLOCK_MONOTONIC across a host suspend).
     */
    private static final class DriftingClock implements TimeSource {
        private final TimeSource base;
        private final long ppm;

        DriftingClock(TimeSource base, long ppm) {
            this.base = base;
            this.ppm = ppm;
        }

        @Override
        public Instant now() {
            return base.now();
        }

        @Override
        public long nanoTime() {
            long n = base.nanoTime();
            return n - n / 1_000_000 * ppm;
        }

        @Override
        public void sleep(Duration d) throws InterruptedException {
            base.sleep(d);
        }
    }

    /** |estimate - the server's true clock| (the in-process server's clock follows {@code clock}'s wall time). */
    private static Duration error(ServerClock.Reading r, VirtualClock clock) {
        return Duration.between(clock.now(), r.server()).abs();
    }

    /**
     * A host suspended (monotonic clock stopped, the wall clocks of this host and of the server went on) at the moment
     * {@code hook} is armed for: the now() of the ServerClock read in MongoGrants.acquire (the reading the request is
     * built from), after write's own first reading.
     */
    private static final class SuspendingClock implements TimeSource {
        private final VirtualClock base;
        private volatile Runnable hook;

        SuspendingClock(VirtualClock base) {
            this.base = base;
        }

        void armAtTheRequestsReading(Runnable r) {
            hook = r;
        }

        @Override
        public java.time.Instant now() {
            Runnable h = hook;
            if (h != null && inAcquiresRead()) {
                hook = null;
                h.run();
            }
            return base.now();
        }

        private static boolean inAcquiresRead() {
            return StackWalker.getInstance().walk(frames -> frames.anyMatch(f ->
                    f.getClassName().equals(MongoGrants.class.getName()) && f.getMethodName().equals("acquire")));
        }

        @Override
        public long nanoTime() {
            return base.nanoTime();
        }

        @Override
        public void sleep(Duration d) throws InterruptedException {
            base.sleep(d);
        }
    }
}
