package dev.locker.mongo;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.FaultProxy;
import dev.locker.testkit.VirtualClock;
import org.bson.Document;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Date;

import static dev.locker.mongo.MongoFixture.lock;
import static dev.locker.mongo.MongoFixture.threadAlive;
import static dev.locker.mongo.MongoFixture.updatesSent;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An acquire whose outcome is unknown (its upsert timed out in a stalled network path, or its reply was cut) on the
 * real in-process MongoDB: the claim its request writes when it lands late is taken back by the locker's background
 * task, so the lock is free again long before the claim's expiry; the task leaves other claims alone, stops once the
 * claim could no longer be live on the server's clock, and stops when the locker closes. Nothing here is timed: the
 * waits are generous upper bounds, far below the expiry that the fault would otherwise cost.
 */
class MongoTakeBackTest extends MongoScenarios {

    /** Far longer than any wait of this test: a lock free again within the test was freed by the take-back. */
    private static final Duration LONG_EXPIRY = Duration.ofMinutes(5);

    private LockerConfig.Builder config(String name) {
        return LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8)).expiry(LONG_EXPIRY);
    }

    /**
     * Given A's path to the server stalled, A's acquire times out and fails; when the path recovers, its held upsert
     * reaches the server and writes A's claim, which nobody will use or release. The take-back removes it: B gets the
     * lock long before the claim's 5-minute expiry, with the token after the grant A's late request made (so that
     * request did land and was taken back); the take-back goes on trying (the claim is not known to be dead yet) and
     * leaves B's claim alone.
     */
    @Test
    void aClaimLandingAfterItsAcquireTimedOutIsTakenBackOnceThePathRecovers() throws Exception {
        CommandLog logA = new CommandLog();
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port())) {
            MongoLocker a = openThrough("127.0.0.1:" + proxy.port(), config("a").retries(1).build(), logA);
            MongoLocker b = openDirect(config("b").build());
            a.acquire(lock("warm-up"), "a pooled connection through the proxy").close();
            KeyColumn lock = lock("stalled");

            proxy.freeze();
            TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                    () -> a.acquire(lock, "stalled"));
            assertEquals(1, a.pendingTakeBacks(), "the claim is being taken back: " + e);
            proxy.thaw(); // the held upsert reaches the server now

            await(() -> rawDoc(lock) != null, "A's late upsert lands");
            Lease held = null;
            long deadline = System.nanoTime() + PATIENCE.toNanos();
            while (held == null) {
                try {
                    held = b.acquire(lock, "after the path recovered");
                } catch (TemporaryLockingException busy) {
                    assertTrue(System.nanoTime() - deadline < 0, "the lock stays blocked by A's late claim: " + busy);
                    Thread.sleep(20);
                }
            }
            try (Lease lease = held) {
                Document doc = rawDoc(lock);
                assertEquals(doc.getLong("tokenBase") + 2, lease.fencingToken(),
                        "A's late request was granted (seq 1) and taken back before B's grant (seq 2): " + doc.toJson());
                assertEquals(1, a.pendingTakeBacks(), "the claim is not known to be dead yet: the take-back goes on");
                long sent = updatesSent(logA);
                await(() -> updatesSent(logA) >= sent + 2, "two more tries of the take-back");
                assertTrue(lease.isValid());
                assertEquals(b.rid(), b.holder(lock).orElseThrow().rid(), "a take-back removes A's claim only");
            }
        }
    }

    /**
     * A's first attempt is held in a stalled connection and times out; its retry on a fresh connection is granted.
     * After A released that lock, the held first attempt lands and writes the same claim again (the lock is free): the
     * release started a take-back for it, so B gets the lock long before that claim's expiry.
     */
    @Test
    void aLateAttemptOfAGrantedAcquireIsTakenBackAfterTheRelease() throws Exception {
        CommandLog logA = new CommandLog();
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port(), "findAndModify")) {
            MongoLocker a = openThrough("127.0.0.1:" + proxy.port(), config("a").retries(3).build(), logA);
            MongoLocker b = openDirect(config("b").build());
            a.acquire(lock("warm-up"), "marks the pooled connection").close();
            KeyColumn lock = lock("retried");

            proxy.freezeMarked(); // the pooled connection only: a new one passes
            logA.clear();
            try (Lease lease = a.acquire(lock, "granted on the second attempt")) {
                assertEquals(2, logA.sent().stream().filter(c -> c.containsKey("findAndModify")).count(),
                        "the first attempt timed out, the second was granted");
                assertEquals(0, a.pendingTakeBacks(), "nothing to take back while the claim is held");
                assertTrue(lease.isValid());
            }
            assertEquals(1, a.pendingTakeBacks(), "the release started the take-back of the first attempt");
            proxy.thaw(); // the first attempt reaches the server now, and finds the lock free

            await(() -> rawDoc(lock).getLong("seq") >= 2, "the first attempt lands after the release");
            Lease held = null;
            long deadline = System.nanoTime() + PATIENCE.toNanos();
            while (held == null) {
                try {
                    held = b.acquire(lock, "after A released");
                } catch (TemporaryLockingException busy) {
                    assertTrue(System.nanoTime() - deadline < 0, "the lock stays blocked by A's late claim: " + busy);
                    Thread.sleep(20);
                }
            }
            try (Lease lease = held) {
                Document doc = rawDoc(lock);
                assertEquals(doc.getLong("tokenBase") + 3, lease.fencingToken(), "A's grant, A's late first attempt, "
                        + "then B: " + doc.toJson());
            }
        }
    }

    /**
     * Closing the locker stops the take-back, while the claim is still pending and A's path still stalled: close
     * does not wait for it, and the take-back's thread ends.
     */
    @Test
    void closeStopsTheTakeBack() throws Exception {
        CommandLog logA = new CommandLog();
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port())) {
            LockerConfig config = config("a").retries(1).build();
            MongoLocker a = openThrough("127.0.0.1:" + proxy.port(), config, logA);
            a.acquire(lock("warm-up"), "a pooled connection through the proxy").close();
            KeyColumn lock = lock("closing");

            proxy.freeze();
            assertThrows(TemporaryLockingException.class, () -> a.acquire(lock, "stalled"));
            assertEquals(1, a.pendingTakeBacks());
            String thread = "locker-mongo-takeback-" + a.rid();
            await(() -> threadAlive(thread), "the take-back thread runs");

            a.close(); // returns at once: the take-back's try in flight on the stalled path is not waited for
            assertEquals(0, a.pendingTakeBacks());
            await(() -> !threadAlive(thread), "the take-back thread ends with the locker");
        }
    }

    /**
     * On a virtual clock (the server's clock follows it): an upsert applied whose reply was cut is taken back at once,
     * the take-back goes on while the claim could still be live, leaves a later holder alone, and stops once the
     * server's clock is past the claim's expiry plus the drift allowance.
     */
    @Test
    void theTakeBackStopsOnceTheClaimCouldNoLongerBeLive() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        CommandLog logA = new CommandLog();
        FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port());
        fixture.closeLast(proxy);
        MongoLocker a = openThrough(proxy.address(),
                config("a").expiry(expiry).retries(1).timeSource(clock).build(), logA);
        MongoLocker b = openDirect(config("b").expiry(expiry).timeSource(clock).build());
        KeyColumn lock = lock("cut");

        proxy.cutRepliesToRequestsCarrying("findAndModify", 1);
        assertThrows(TemporaryLockingException.class, () -> a.acquire(lock, "reply cut"));
        assertEquals(1, proxy.cutReplies());
        await(() -> rawDoc(lock) != null && rawDoc(lock).get("holder") == null, "the applied claim is taken back");

        clock.advance(expiry.dividedBy(2));
        try (Lease lease = b.acquire(lock, "a later holder")) {
            long sent = updatesSent(logA);
            await(() -> updatesSent(logA) >= sent + 2, "two more tries of the take-back");
            assertEquals(1, a.pendingTakeBacks(), "half the expiry later the claim could still be live");
            assertEquals(b.rid(), b.holder(lock).orElseThrow().rid(), "a take-back removes A's claim only");
            assertTrue(lease.isValid());
        }

        clock.advance(expiry); // past the expiry A's request sent, and the allowance of a hundredth of it
        await(() -> a.pendingTakeBacks() == 0, "the take-back stops once the claim can no longer be live");
    }

    /**
     * A's acquire is applied but its reply is cut (outcome unknown, no retry): its claim is taken back in the
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
        FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port());
        fixture.closeLast(proxy);
        MongoLocker a = openThrough(proxy.address(), config("a", expiry, clock).retries(1).build(), logA);
        MongoLocker b = openDirect(config("b", expiry, clock).build());
        KeyColumn lock = lock("own-regrant");

        proxy.cutRepliesToRequestsCarrying("findAndModify", 1);
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
     * A's first attempt is applied but its reply is cut; the retry meets A's own live claim and is granted
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
        FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port());
        fixture.closeLast(proxy);
        MongoLocker a = openThrough(proxy.address(), config("a", expiry, clock).retries(3).build(), logA);
        MongoLocker b = openDirect(config("b", expiry, clock).build());
        KeyColumn lock = lock("regranted");

        proxy.cutRepliesToRequestsCarrying("findAndModify", 1);
        Lease mine = a.acquire(lock, "granted on the retry with the first attempt's claim");
        assertEquals(1, proxy.cutReplies());
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
     * A's upsert is held in a stalled connection and times out; the take-back (on fresh connections) finds
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
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port(), "findAndModify")) {
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
     * Closing the locker while a take-back is pending sends no further try once its thread ended, and releases
     * nothing else.
     */
    @Test
    void afterCloseNoTakeBackTryIsSent() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        CommandLog logA = new CommandLog();
        FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port());
        fixture.closeLast(proxy);
        MongoLocker a = openThrough(proxy.address(), config("a", expiry, clock).retries(1).build(), logA);
        MongoLocker b = openDirect(config("b", expiry, clock).build());
        KeyColumn lock = lock("closed");

        proxy.cutRepliesToRequestsCarrying("findAndModify", 1);
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

    /** Updates that unset a holder: releases and take-back tries (a renewal only sets the expiry). */
    private static long unsetsSent(CommandLog log) {
        return log.sent().stream().filter(c -> c.containsKey("update") && c.toJson().contains("$unset")).count();
    }
}
