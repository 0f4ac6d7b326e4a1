package dev.locker.mongo;

import com.mongodb.client.model.Filters;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.testkit.VirtualClock;
import org.bson.Document;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static dev.locker.mongo.MongoFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Adversarial review (round 4) of the MongoDB fixes: {@code $max tokenBase} at every grant, the renewal that proves its
 * grant (token compared, re-grant withdrawn), and the aging server-clock estimate. On the in-process MongoDB whose clock
 * follows a virtual clock. {@code @Disabled} cases fail on the reviewed code (findings); the others pin what was
 * attacked and found sound. Nothing is timed.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class Review4Test {

    private MongoFixture fixture;
    private InProcessMongo mongo;

    @BeforeAll
    void start() {
        fixture = MongoFixture.scenarios("review4_" + LockerConfig.randomRid().substring(0, 8));
        mongo = fixture.server();
    }

    @AfterAll
    void stop() {
        fixture.close();
    }

    @AfterEach
    void closeAll() throws Exception {
        fixture.closeOpened();
        mongo.clock().follow(TimeSource.system());
    }

    private static LockerConfig.Builder config(String name, Duration expiry, TimeSource clock) {
        return LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8)).expiry(expiry)
                .timeSource(clock);
    }

    /**
     * Finding 1: {@code $max tokenBase} at every grant breaks the documented guarantee that tokens still increase after
     * the document is deleted "as long as fewer than one grant per microsecond happened on it".
     *
     * <p>The token is {@code tokenBase + seq}. Before, tokenBase was the creation time T0 and seq counted the grants, so
     * every token stayed below T0 + (microseconds elapsed) = below the time of its grant, and a re-created document
     * (tokenBase = its creation time, seq 1) started above all of them. Now every grant lifts tokenBase to its own time
     * T_last <em>while seq keeps counting from the document's creation</em>: the last token is T_last + seq, i.e. the
     * time of the last grant plus the document's whole grant count. After a deletion (TTL once the free lock's
     * expiresAt passed, or an operator) the next grant at T_new gets T_new + 1, below the old tokens whenever the
     * document made more grants than the microseconds between its last grant and the re-creation. Here: 2000 grants,
     * one per millisecond (a thousandth of the documented rate), then deleted and granted again 1 ms later: the token
     * falls by ~1000. In production a lock granted 1000 times a second for a day (seq 86.4 M) regresses if it is
     * re-created within 86 s of its last grant, which the TTL monitor (every 60 s) routinely does.
     *
     * <p>Fix: never let the token run ahead of the time by the grant count: raise tokenBase to the request time minus
     * the current seq, i.e. a pipeline update {@code tokenBase: {$max: ["$tokenBase", {$subtract: [now, {$ifNull:
     * ["$seq", 0]}]}]}} (token' = max(token + 1, now + 1)); or keep one {@code token} field updated to
     * {@code max(token + 1, now)} in the same pipeline. Either keeps every token at or below its grant's time while grants
     * come less than once per microsecond, which is what the deletion argument needs.
     */
    @Test
    void finding1_maxTokenBasePlusSeqMakesARecreatedDocumentsTokenFall() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        MongoLocker a = fixture.openDirect(config("a", expiry, clock).build());
        KeyColumn lock = lock("busy");
        long last = 0;
        for (int i = 0; i < 2000; i++) {
            try (Lease l = a.acquire(lock, "grant " + i)) {
                assertTrue(l.fencingToken() > last, "within one document the token rises");
                last = l.fencingToken();
            }
            clock.advance(Duration.ofMillis(1)); // one grant per millisecond: far fewer than one per microsecond
        }
        Document before = fixture.rawDoc(lock);
        // the TTL monitor (or an operator) deletes the free lock's document
        fixture.raw().deleteOne(Filters.eq("_id", lock.legible()));
        try (Lease next = a.acquire(lock, "the document re-created")) {
            assertTrue(next.fencingToken() > last, "fencing tokens must strictly increase across the deletion: the "
                    + "last token of the deleted document was " + last + " (" + before.toJson() + "), the re-created "
                    + "one's is " + next.fencingToken() + " (lower by " + (last - next.fencingToken()) + ")");
        }
    }

    /**
     * Sound: a refused acquire (a live holder: the upsert's duplicate key) changes neither seq nor tokenBase, so the
     * holder's renewal, which now compares the document's token with its own, still succeeds; and verify still agrees.
     */
    @Test
    void aRefusedAcquireDoesNotMoveTheTokenTheHoldersRenewalCompares() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        MongoLocker a = fixture.openDirect(config("a", expiry, clock).build());
        MongoLocker b = fixture.openDirect(config("b", expiry, clock).build());
        KeyColumn lock = lock("held");
        try (Lease held = a.acquire(lock, "holder")) {
            long token = held.fencingToken();
            for (int i = 0; i < 5; i++) {
                clock.advance(Duration.ofSeconds(1));
                assertThrows(TemporaryLockingException.class, () -> b.acquire(lock, "refused"));
                held.renew();
                held.check();
                assertEquals(token, held.fencingToken());
            }
        }
    }

    /**
     * Sound: tokens stay increasing when an earlier build ({@code $setOnInsert tokenBase}) shares the collection: its
     * grants only {@code $inc seq}, ours only raise tokenBase; a document it creates carries its creation time.
     */
    @Test
    void grantsOfAnOlderBuildInterleavedKeepTokensIncreasing() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        MongoLocker a = fixture.openDirect(config("a", expiry, clock).build());
        KeyColumn lock = lock("mixed");
        long last = 0;
        for (int i = 0; i < 20; i++) {
            if (i % 2 == 0) {
                try (Lease l = a.acquire(lock, "new build")) {
                    assertTrue(l.fencingToken() > last);
                    last = l.fencingToken();
                }
            } else { // an older build's grant: $inc seq, tokenBase untouched (the document exists)
                fixture.raw().updateOne(Filters.eq("_id", lock.legible()),
                        new Document("$inc", new Document("seq", 1L)));
                Document d = fixture.rawDoc(lock);
                long t = LockDocument.token(d);
                assertTrue(t > last);
                last = t;
                fixture.raw().updateOne(Filters.eq("_id", lock.legible()), new Document("$unset",
                        new Document("holder", "")));
            }
            clock.advance(Duration.ofSeconds(1));
        }
    }
    /** |estimate - the server's true clock| (the in-process server's clock follows {@code clock}'s wall time). */
    private static Duration error(ServerClock.Reading r, VirtualClock clock) {
        return Duration.between(clock.now(), r.server()).abs();
    }

    /**
     * Sound: a host suspend (the monotonic clock stops, the local wall clock and the server's go on) is caught by the
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
     * A host suspended (monotonic clock stopped, the wall clocks of this host and of the server went on) at the moment
     * {@code hook} is armed for: the now() of the ServerClock read in MongoLocker.acquire (the reading the request is
     * built from), after writeSingleLock's own first reading.
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
                    f.getClassName().equals(MongoLocker.class.getName()) && f.getMethodName().equals("acquire")));
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

    /**
     * Finding 2: acquire counts the holder's deadline with the uncertainty of writeSingleLock's first reading, but
     * writes the expiry from a later reading ({@code r} in acquire) whose uncertainty may be far larger, which is
     * exactly what the new ServerClock.read() produces when a re-measure fails: it returns the same estimate with the
     * move added to the uncertainty, and acquire writes {@code expiresAt = r.server + expiry} from that estimate.
     *
     * <p>Interleaving: A reads {@code first} (sample fresh, uncertainty ~1 ms). The host is suspended for 10 s (the
     * monotonic clock stops; the wall clocks, the server's too, go on). A's acquire reads {@code r}: the offset moved by
     * 10 s, so read() measures again, and that round trip fails (its reply lost); r is the old estimate, 10 s early,
     * with the 10 s in its uncertainty: honest. The upsert, on a fresh connection, is granted with
     * {@code expiresAt = true time - 10 s + expiry}. A's deadline is {@code first.nanos + 0.99 (expiry - 1 ms)}, a
     * monotonic reading from before the suspend, i.e. 10 s past the written expiry in true time. 21 s later B (correct
     * estimate) takes the "expired" claim over while A's lease is still valid for ~9 s: two holders.
     *
     * <p>Fix: count the deadline with the uncertainty of the reading the request was built from as well:
     * {@code deadline(first.nanos(), expiry.minus(max(first.uncertainty(), r.uncertainty())))} (first.nanos is earlier,
     * r.server - r.uncertainty is a lower bound of the true time at r.nanos), i.e. pass r to granted(); the same for the
     * contended path (its confirmed grant was written by some attempt's reading: use the largest uncertainty of all
     * attempts' readings).
     */
    @Test
    void finding2_theDeadlineIgnoresTheUncertaintyOfTheReadingTheExpiryWasWrittenFrom() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        SuspendingClock aClock = new SuspendingClock(clock);
        Duration expiry = Duration.ofSeconds(30);
        try (CuttingProxy proxy = new CuttingProxy(new java.net.InetSocketAddress("127.0.0.1", mongo.port()))) {
            MongoLocker a = fixture.openThrough(proxy.address(), config("a", expiry, aClock).retries(1).build(), null);
            MongoLocker b = fixture.openDirect(config("b", expiry, clock).build());
            a.acquire(lock("warm-up"), "pools a connection").close();
            KeyColumn lock = lock("suspended");
            aClock.armAtTheRequestsReading(() -> {
                clock.stepWallClock(Duration.ofSeconds(10)); // suspended between A's two readings
                proxy.cutReplyTo("isMaster", 1);             // and the re-measure's reply is lost
            });
            try (Lease mine = a.acquire(lock, "A")) {
                assertEquals(1, proxy.cuts(), "the re-measure's reply was cut");
                Document doc = fixture.rawDoc(lock);
                // fixed: A's deadline allows for the uncertainty of the reading its expiry was written from (the
                // 10 s move), so A believes in its lease no longer than the written expiry lets it
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
}
