package dev.locker.mongo;

import com.mongodb.client.model.Filters;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockProbe;
import dev.locker.api.LossReason;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.FaultProxy;
import dev.locker.testkit.Pause;
import dev.locker.testkit.StepPauses;
import dev.locker.testkit.VirtualClock;
import org.bson.Document;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.locker.mongo.MongoFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** Requests that land late revive no claim, and lower no token while they land within ttlGrace of their sending. */
class MongoLateRequestTest extends MongoScenarios {

    /**
     * An acquire's upsert is held in a stalled path while B creates the lock's document and releases it. Landing
     * ttlGrace after it was sent, it meets the document still there, and the next token is above B's. Landing once
     * the TTL index removed the document, it creates it again with its own older tokenBase: the next token falls
     * below B's. That is the documented bound: no acquire request lands more than ttlGrace after it was sent.
     */
    @Test
    void aLateUpsertWithinTtlGraceNeverLowersATokenWhileOneLandingAfterTtlGraceCan() throws Exception {
        LateLanding within = landLate(false);
        assertNotNull(within.kept, "the TTL index removed the document within ttlGrace of A's request");
        assertTrue(within.nextToken > within.tokenB, "fencing tokens must strictly increase: B had " + within.tokenB
                + ", the next holder got " + within.nextToken + " after A's upsert landed ttlGrace after it was sent: "
                + within.landed.toJson());

        LateLanding after = landLate(true);
        assertNull(after.kept, "the TTL index kept the document past ttlGrace after B released it");
        assertTrue(after.nextToken < after.tokenB, "past ttlGrace, A's late upsert re-creates the document with the "
                + "older tokenBase of its sending (the documented weakness): B had " + after.tokenB + ", the next "
                + "holder got " + after.nextToken + "; A's upsert inserted " + after.landed.toJson());
    }

    /** The tokens around one late upsert: B's, the next holder's, and the document before and after it landed. */
    private static final class LateLanding {
        long tokenB;
        long nextToken;
        Document kept;
        Document landed;
    }

    /**
     * A's acquire is held in a stalled path; B takes and releases the lock. Then the TTL monitor runs and A's upsert
     * lands: ttlGrace after it was sent, or just past ttlGrace after B's release when {@code pastGrace}.
     */
    private LateLanding landLate(boolean pastGrace) throws Exception {
        LateLanding out = new LateLanding();
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port(), "findAndModify")) {
            MongoLocker a = fixture.openThrough("127.0.0.1:" + proxy.port(), config("a", expiry, clock).retries(1)
                    .build(), null);
            MongoLocker b = fixture.openDirect(config("b", expiry, clock).build());
            MongoLocker c = fixture.openDirect(config("c", expiry, clock).build());
            a.acquire(lock("warm-up"), "marks the pooled connection").close();
            KeyColumn lock = lock("recreated");
            Duration grace = ttlGrace();

            proxy.freezeMarked();
            Instant sent = clock.now();
            assertThrows(TemporaryLockingException.class, () -> a.acquire(lock, "stalled upsert"));
            clock.advance(Duration.ofSeconds(1));
            try (Lease theirs = b.acquire(lock, "creates the document")) {
                out.tokenB = theirs.fencingToken();
            }
            Instant released = clock.now();
            clock.advance(expiry.plusSeconds(1)); // A's claim could no longer be live: its take-back ends
            await(() -> a.pendingTakeBacks() == 0, "A's take-back ends");
            long seq = fixture.rawDoc(lock).getLong("seq");

            Instant landing = pastGrace ? released.plus(grace).plusSeconds(1) : sent.plus(grace);
            clock.advance(Duration.between(clock.now(), landing));
            runTtlMonitor(clock.now(), grace);
            out.kept = fixture.rawDoc(lock);
            proxy.thaw();
            await(() -> fixture.rawDoc(lock) != null && (out.kept == null || fixture.rawDoc(lock).getLong("seq") > seq),
                    "A's held upsert lands");
            out.landed = fixture.rawDoc(lock);
            try (Lease next = c.acquire(lock, "the next holder")) {
                out.nextToken = next.fencingToken();
            }
        }
        return out;
    }

    /** The TTL index's expireAfterSeconds: the ttlGrace of the first locker on the collection (1 h by default). */
    private Duration ttlGrace() {
        for (Document ix : fixture.raw().listIndexes()) {
            if (MongoLocker.TTL_INDEX.equals(ix.getString("name"))) {
                return Duration.ofSeconds(((Number) ix.get("expireAfterSeconds")).longValue());
            }
        }
        throw new AssertionError("no TTL index on the lock collection");
    }

    /**
     * What MongoDB's TTL monitor does at {@code now}: it deletes the documents whose expiresAt is more than
     * {@code grace} ago. The in-process server has no TTL monitor of its own.
     */
    private void runTtlMonitor(Instant now, Duration grace) {
        fixture.raw().deleteMany(Filters.lt(LockDocument.EXPIRES_AT, Date.from(now.minus(grace))));
    }

    /**
     * A's first attempt is held in a stalled path; the retry is granted, and an operator force-releases it. The held
     * attempt then lands and grants the lock again, to nobody. A's renewal is told FORCE_RELEASED, the late re-grant is
     * withdrawn, and the next token is higher.
     */
    @Test
    void aForcedReleaseIsNotUndoneByALateAttemptOfTheHoldersAcquire() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(30);
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port(), "findAndModify")) {
            MongoLocker a = fixture.openThrough("127.0.0.1:" + proxy.port(), config("a", expiry, clock).retries(3)
                    .build(), null);
            MongoLocker op = fixture.openDirect(config("operator", expiry, clock).build());
            a.acquire(lock("warm-up"), "marks the pooled connection").close();
            KeyColumn lock = lock("forced");

            proxy.freezeMarked();
            Lease mine = a.acquire(lock, "granted on the second attempt").keepAlive(false);
            long token = mine.fencingToken();
            assertTrue(op.forceRelease(lock, "operator frees it", token));
            long seqAfterForce = fixture.rawDoc(lock).getLong("seq");

            proxy.thaw();
            await(() -> fixture.rawDoc(lock).getLong("seq") > seqAfterForce, "A's held first attempt lands");
            clock.advance(Duration.ofSeconds(1));
            try {
                mine.renew();
                fail("A's renewal succeeded after its claim was force-released (A thinks it holds with token " + token
                        + "; the lock document now says " + fixture.rawDoc(lock).toJson() + ")");
            } catch (ExpiredLockException told) {
                assertEquals(LossReason.FORCE_RELEASED, told.reason(), told.toString());
            }
            assertNull(fixture.rawDoc(lock).get("holder"), "the late re-grant, nobody's, was withdrawn: "
                    + fixture.rawDoc(lock).toJson());
            try (Lease next = op.acquire(lock, "next")) {
                assertTrue(next.fencingToken() > token, "the next holder's token is above the released one's");
            }
        }
    }

    /**
     * A renewal paused before it is sent (a GC pause, or a request stuck in the client) until an operator
     * force-released the claim by its token revives nothing: it matches no holder, A learns FORCE_RELEASED, and the
     * next holder gets a higher token.
     */
    @Test
    void aLateRenewalAfterAForcedReleaseRevivesNothing() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(30);
        StepPauses pauses = new StepPauses();
        MongoLocker a = fixture.openDirect(config("a", expiry, clock).probe(pauses).build());
        MongoLocker b = fixture.openDirect(config("b", expiry, clock).build());
        KeyColumn lock = lock("late-renew");
        Lease mine = a.acquire(lock, "holder").keepAlive(false);
        long token = mine.fencingToken();
        Pause beforeRenew = pauses.before(LockProbe.Step.RENEW);
        Future<?> renewal = pool.submit(mine::renew);
        beforeRenew.awaitArrival();
        assertTrue(b.forceRelease(lock, "operator", token));
        beforeRenew.resume();
        ExecutionFailure.of(renewal, ExpiredLockException.class, e ->
                assertEquals(LossReason.FORCE_RELEASED, e.reason(), e.toString()));
        assertNull(fixture.rawDoc(lock).get("holder"), "nothing revived: " + fixture.rawDoc(lock).toJson());
        assertFalse(mine.isValid());
        try (Lease theirs = b.acquire(lock, "next")) {
            assertTrue(theirs.fencingToken() > token);
        }
    }

    /**
     * A pauses before its release until its claim expired and B took the lock over; A's late release matches
     * B's claim id nowhere and leaves B holding (B's one-round-trip check passes, a third process is refused).
     */
    @Test
    void aLateReleaseOfATakenOverClaimLeavesTheNewHolder() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        StepPauses pauses = new StepPauses();
        MongoLocker a = fixture.openDirect(config("a", expiry, clock).probe(pauses).build());
        MongoLocker b = fixture.openDirect(config("b", expiry, clock).build());
        MongoLocker c = fixture.openDirect(config("c", expiry, clock).build());
        KeyColumn lock = lock("late-release");
        Lease mine = a.acquire(lock, "holder").keepAlive(false);
        long token = mine.fencingToken();
        Pause beforeRelease = pauses.before(LockProbe.Step.RELEASE);
        Future<?> release = pool.submit(mine::close);
        beforeRelease.awaitArrival();
        clock.advance(expiry.plusSeconds(1));
        try (Lease theirs = b.acquire(lock, "takes over").keepAlive(false)) {
            assertTrue(theirs.fencingToken() > token);
            beforeRelease.resume();
            release.get(30, TimeUnit.SECONDS);
            theirs.check();
            assertTrue(theirs.isValid());
            assertEquals(b.rid(), c.holder(lock).orElseThrow().rid());
            assertThrows(TemporaryLockingException.class, () -> c.acquire(lock, "held by B"));
        }
    }

    /**
     * A's first attempt is held in a stalled path, its retry is granted (claim C). A holds C past its expiry
     * (paused), B takes over and releases, and only then the held first attempt lands: its expiry was fixed before the
     * retry's, so it writes a claim that is dead on arrival, A's renewal cannot extend it, and the next holder gets a
     * higher token.
     */
    @Test
    void aLateFirstAttemptAfterATakeoverWritesADeadClaimThatCannotBeRenewed() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port(), "findAndModify")) {
            MongoLocker a = fixture.openThrough("127.0.0.1:" + proxy.port(), config("a", expiry, clock).retries(3)
                    .build(), null);
            MongoLocker b = fixture.openDirect(config("b", expiry, clock).build());
            a.acquire(lock("warm-up"), "marks the pooled connection").close();
            KeyColumn lock = lock("late-first");

            proxy.freezeMarked();
            Lease mine = a.acquire(lock, "granted on the second attempt").keepAlive(false);
            clock.advance(expiry.plusSeconds(1));
            long tokenB;
            try (Lease theirs = b.acquire(lock, "takes over")) {
                tokenB = theirs.fencingToken();
            }
            long seq = fixture.rawDoc(lock).getLong("seq");
            proxy.thaw();
            await(() -> fixture.rawDoc(lock).getLong("seq") > seq, "A's held first attempt lands");
            Document doc = fixture.rawDoc(lock);
            Document holder = doc.get("holder", Document.class);
            assertNotNull(holder, doc.toJson());
            assertTrue(holder.getDate("expiresAt").toInstant().isBefore(clock.now()), "dead on arrival: " + doc.toJson());
            assertThrows(ExpiredLockException.class, mine::renew);
            try (Lease next = b.acquire(lock, "takes the dead late claim over")) {
                assertTrue(next.fencingToken() > tokenB);
            }
        }
    }

    /** A future that must fail with {@code type}. */
    private static final class ExecutionFailure {
        static <T extends Throwable> void of(Future<?> f, Class<T> type, java.util.function.Consumer<T> check)
                throws Exception {
            try {
                f.get(30, TimeUnit.SECONDS);
                fail("expected " + type.getSimpleName());
            } catch (java.util.concurrent.ExecutionException e) {
                check.accept(assertInstanceOf(type, e.getCause()));
            }
        }
    }
}
