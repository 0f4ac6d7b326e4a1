package dev.locker.mongo;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.testkit.FreezingProxy;
import dev.locker.testkit.VirtualClock;
import org.bson.Document;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Date;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static dev.locker.mongo.MongoFixture.lock;
import static dev.locker.mongo.MongoFixture.threadAlive;
import static dev.locker.mongo.MongoFixture.updatesSent;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Adversarial review (round 2) of MongoLocker's background take-back of claims whose acquire's outcome is unknown
 * (d57559d, fa8b6ce), on the real in-process MongoDB with the fault proxies and, where the locker takes one, a virtual
 * clock that the server's clock follows. Every case here checks a way the take-back could remove a claim that somebody
 * uses, or a late request that could outlive it; all of them were found sound. Nothing here is timed: the waits are
 * generous upper bounds.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class MongoTakeBackReviewTest {

    private static final Duration PATIENCE = Duration.ofSeconds(30);

    private MongoFixture fixture;
    private InProcessMongo mongo;

    @BeforeAll
    void start() {
        fixture = MongoFixture.scenarios("takeback_review_" + LockerConfig.randomRid().substring(0, 8));
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

    private LockerConfig.Builder config(String name, Duration expiry, VirtualClock clock) {
        return LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8)).expiry(expiry)
                .timeSource(clock);
    }

    private MongoLocker openThrough(String address, LockerConfig config, CommandLog log) {
        return fixture.openThrough(address, config, log);
    }

    private MongoLocker openDirect(LockerConfig config) {
        return fixture.openDirect(config);
    }

    private Document rawDoc(KeyColumn lock) {
        return fixture.rawDoc(lock);
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        MongoFixture.await(condition, what, PATIENCE);
    }

    /** Updates that unset a holder: releases and take-back tries (a renewal only sets the expiry). */
    private static long unsetsSent(CommandLog log) {
        return log.sent().stream().filter(c -> c.containsKey("update") && c.toJson().contains("$unset")).count();
    }

    /**
     * Sound: A's acquire is applied but its reply is cut (outcome unknown, no retry): its claim is taken back in the
     * background. A then acquires the same lock again while that take-back goes on (the claim could still be live on
     * the clock, which stands still). The new grant has a claim id of its own: several further tries of the take-back
     * leave it alone (a round trip to the server confirms the lease, a renewal succeeds, B is refused), and releasing it
     * starts no second take-back.
     */
    @Test
    void theCallersLaterGrantOnTheSameLockSurvivesTheTakeBackOfItsFailedAcquire() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        CommandLog logA = new CommandLog();
        CuttingProxy proxy = new CuttingProxy(new InetSocketAddress("127.0.0.1", mongo.port()));
        fixture.closeLast(proxy);
        MongoLocker a = openThrough(proxy.address(), config("a", expiry, clock).retries(1).build(), logA);
        MongoLocker b = openDirect(config("b", expiry, clock).build());
        KeyColumn lock = lock("own-regrant");

        proxy.cutReplyTo("findAndModify", 1);
        assertThrows(TemporaryLockingException.class, () -> a.acquire(lock, "reply cut"));
        assertEquals(1, a.pendingTakeBacks());
        await(() -> rawDoc(lock) != null && rawDoc(lock).get("holder") == null, "the applied claim is taken back");

        try (Lease mine = a.acquire(lock, "the caller tries again")) {
            long sent = updatesSent(logA);
            await(() -> updatesSent(logA) >= sent + 3, "three more tries of the take-back after the new grant");
            assertEquals(1, a.pendingTakeBacks(), "the failed acquire's claim could still be live: the task goes on");
            mine.check(); // one round trip: our claim, with our token, is the holder
            mine.renew();
            mine.check();
            assertTrue(mine.isValid());
            assertThrows(TemporaryLockingException.class, () -> b.acquire(lock, "held by A"));
            Document doc = rawDoc(lock);
            assertEquals(doc.getLong("tokenBase") + 2, mine.fencingToken(), doc.toJson());
        }
        assertEquals(1, a.pendingTakeBacks(), "a plain grant's release starts no take-back");
        try (Lease theirs = b.acquire(lock, "after A released")) {
            assertTrue(theirs.isValid());
        }
    }

    /**
     * Sound: A's first attempt is applied but its reply is cut; the retry meets A's own live claim and is granted
     * with it (the same claim id). While A holds it and renews it, nothing is taken back (no update unsets a holder),
     * B is refused;
     * A's release starts the take-back, which leaves B's later claim alone.
     */
    @Test
    void aRetryGrantedWithTheAppliedAttemptsClaimIsNotTakenBackWhileHeld() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        CommandLog logA = new CommandLog();
        CuttingProxy proxy = new CuttingProxy(new InetSocketAddress("127.0.0.1", mongo.port()));
        fixture.closeLast(proxy);
        MongoLocker a = openThrough(proxy.address(), config("a", expiry, clock).retries(3).build(), logA);
        MongoLocker b = openDirect(config("b", expiry, clock).build());
        KeyColumn lock = lock("regranted");

        proxy.cutReplyTo("findAndModify", 1);
        Lease mine = a.acquire(lock, "granted on the retry with the first attempt's claim");
        assertEquals(1, proxy.cuts());
        Document granted = rawDoc(lock);
        assertEquals(granted.getLong("tokenBase") + 1, mine.fencingToken(), "the first attempt's grant: " + granted.toJson());
        assertEquals(0, a.pendingTakeBacks(), "nothing is taken back while the claim is held");
        long unsets = unsetsSent(logA);
        for (int i = 0; i < 3; i++) {
            clock.advance(expiry.dividedBy(4));
            mine.renew();
            mine.check();
        }
        assertEquals(unsets, unsetsSent(logA), "no take-back try (nor any other unset) while A holds the claim");
        assertThrows(TemporaryLockingException.class, () -> b.acquire(lock, "held by A"));

        mine.close();
        assertEquals(1, a.pendingTakeBacks(), "the release started the take-back of the cut attempt");
        await(() -> unsetsSent(logA) >= unsets + 2, "the release and a try of the take-back unset (so the count "
                + "above would have seen a try)");
        try (Lease theirs = b.acquire(lock, "after A released")) {
            long after = updatesSent(logA);
            await(() -> updatesSent(logA) >= after + 2, "two more tries of the take-back");
            theirs.check();
            assertTrue(theirs.isValid());
        }
    }

    /**
     * Sound: A's upsert is held in a stalled connection and times out; the take-back (on fresh connections) finds
     * nothing, and stops once the claim could no longer be live (the clock moved past the expiry sent plus the
     * allowance). Only then does the held upsert land and write A's claim: it carries the expiry fixed before it was
     * sent, so it is dead on arrival, and B takes the lock over at once.
     */
    @Test
    void anUpsertLandingAfterTheTakeBackStoppedWritesADeadClaim() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        CommandLog logA = new CommandLog();
        try (FreezingProxy proxy = new FreezingProxy("127.0.0.1", mongo.port(), "findAndModify")) {
            MongoLocker a = openThrough("127.0.0.1:" + proxy.port(), config("a", expiry, clock).retries(1).build(),
                    logA);
            MongoLocker b = openDirect(config("b", expiry, clock).build());
            a.acquire(lock("warm-up"), "marks the pooled connection").close();
            KeyColumn lock = lock("late");

            proxy.freezeMarked();
            assertThrows(TemporaryLockingException.class, () -> a.acquire(lock, "stalled"));
            assertEquals(1, a.pendingTakeBacks());
            // past the expiry sent, the drift allowance (1 %) and what the estimate's age adds to its uncertainty
            // (0.1 % of the ~10 s since the sample: ServerClock's aging)
            clock.advance(expiry.plus(expiry.dividedBy(25)));
            await(() -> a.pendingTakeBacks() == 0, "the take-back stops once the claim can no longer be live");
            assertEquals(null, rawDoc(lock), "the upsert has not landed yet");

            proxy.thaw();
            await(() -> rawDoc(lock) != null, "the held upsert lands after the take-back stopped");
            Document doc = rawDoc(lock);
            Document holder = doc.get("holder", Document.class);
            assertNotNull(holder, doc.toJson());
            assertTrue(holder.getDate("expiresAt").before(Date.from(clock.now())),
                    "the late claim is dead on the server's clock: " + doc.toJson());
            try (Lease theirs = b.acquire(lock, "takes over the dead late claim")) {
                assertEquals(doc.getLong("tokenBase") + 2, theirs.fencingToken());
            }
        }
    }

    /**
     * Sound: closing the locker while a take-back is pending sends no further try once its thread ended, and releases
     * nothing else.
     */
    @Test
    void afterCloseNoTakeBackTryIsSent() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        CommandLog logA = new CommandLog();
        CuttingProxy proxy = new CuttingProxy(new InetSocketAddress("127.0.0.1", mongo.port()));
        fixture.closeLast(proxy);
        MongoLocker a = openThrough(proxy.address(), config("a", expiry, clock).retries(1).build(), logA);
        MongoLocker b = openDirect(config("b", expiry, clock).build());
        KeyColumn lock = lock("closed");

        proxy.cutReplyTo("findAndModify", 1);
        assertThrows(TemporaryLockingException.class, () -> a.acquire(lock, "reply cut"));
        long sent = updatesSent(logA);
        await(() -> updatesSent(logA) >= sent + 2, "the take-back runs");
        String thread = "locker-mongo-takeback-" + a.rid();
        try (Lease theirs = b.acquire(lock, "B holds it while A closes")) {
            a.close();
            assertEquals(0, a.pendingTakeBacks());
            await(() -> !threadAlive(thread), "the take-back thread ends with the locker");
            long atClose = updatesSent(logA);
            Thread.sleep(500); // a window for a stray try (not a timing assertion: none may come at all)
            assertEquals(atClose, updatesSent(logA), "no take-back try after the locker closed");
            theirs.check();
        }
    }
}
