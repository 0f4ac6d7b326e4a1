package dev.locker.mongo;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.FaultProxy;
import dev.locker.testkit.VirtualClock;
import org.bson.Document;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;

import static dev.locker.mongo.MongoFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Across elections between two members whose clocks differ by at most serverClockSkew, tokens rise, late claims stay
 * dead and no second holder is granted, even when each write and each judgement comes from the worse clock.
 *
 * <p>The member ahead is the class's in-process server, its clock shifted forward by the bound; the member behind is a
 * second in-process server. An election copies the lock collection from the old primary to the new one.
 */
class MongoElectionsWithinTheBoundTest extends MongoScenarios {

    private static final Duration SKEW = Duration.ofSeconds(2);
    private static final Duration EXPIRY = Duration.ofSeconds(10);

    private InProcessMongo behind;
    private MongoClient behindAdmin;

    @BeforeAll
    void startBehind() {
        behind = InProcessMongo.start();
        behindAdmin = MongoClients.create(behind.uri());
    }

    @AfterAll
    void stopBehind() {
        behindAdmin.close();
        behind.close();
    }

    @AfterEach
    void clocksBack() {
        mongo.clock().offset(Duration.ZERO);
        behind.clock().offset(Duration.ZERO);
    }

    /** A locker on {@code server} through its URI, telling it the bound, with a TTL grace of 0. */
    private MongoLocker open(InProcessMongo server, String name, VirtualClock clock) {
        return openBounded(server, SKEW, config(name, EXPIRY, clock).build());
    }

    /**
     * A locker through {@code address} (a proxy's) with the bound, on a client of its own ({@link #clientThrough}): a
     * stalled upsert fails the acquire instead of being sent again.
     */
    private MongoLocker openThrough(String address, String name, VirtualClock clock) {
        return fixture.closeFirst(MongoLocker.builder().client(clientThrough(address)).database("locker")
                .collection(fixture.collection()).serverClockSkew(SKEW).clockCheckInterval(Duration.ZERO)
                .ttlGrace(Duration.ZERO).config(config(name, EXPIRY, clock).retries(1).build()).build());
    }

    private MongoCollection<Document> aheadLocks() {
        return fixture.raw();
    }

    private MongoCollection<Document> behindLocks() {
        return behindAdmin.getDatabase("locker").getCollection(fixture.collection());
    }

    /** An election: the new primary holds the old one's lock collection as it was replicated to it. */
    private static void elect(MongoCollection<Document> from, MongoCollection<Document> to) {
        List<Document> docs = from.find().into(new ArrayList<>());
        to.deleteMany(new Document());
        if (!docs.isEmpty()) {
            to.insertMany(docs);
        }
    }

    /** One pass of a TTL monitor at {@code now} on its member's clock, with the index's expireAfterSeconds of 0. */
    private static void ttlMonitorPass(MongoCollection<Document> locks, Date now) {
        locks.deleteMany(Filters.lt(LockDocument.EXPIRES_AT, now));
    }

    /**
     * A creates the document on the member ahead. After an election to the member behind, B force-releases A's claim
     * there, so the TTL field is written on the clock behind. Elected again, the member ahead deletes the document as
     * soon as its TTL monitor may. Elected once more, the member behind creates it afresh: its token is still higher.
     */
    @Test
    void aDocumentReleasedBehindDeletedAheadAndRecreatedBehindIssuesAHigherToken() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        mongo.clock().offset(SKEW);
        behind.clock().follow(clock);
        KeyColumn lock = lock("three-elections");

        MongoLocker a = open(mongo, "a", clock);
        Lease held = a.acquire(lock, "creates the document ahead").keepAlive(false);
        long last = held.fencingToken();

        elect(aheadLocks(), behindLocks());
        MongoLocker b = open(behind, "b", clock);
        assertTrue(b.forceRelease(lock, "an operator frees it on the member behind", last));
        Document released = behindLocks().find(Filters.eq("_id", lock.legible())).first();

        elect(behindLocks(), aheadLocks());
        for (int pass = 0; fixture.rawDoc(lock) != null; pass++) {
            assertTrue(pass < 10_000, "the TTL monitor never deleted " + fixture.rawDoc(lock).toJson());
            clock.advance(Duration.ofMillis(1));
            ttlMonitorPass(aheadLocks(), Date.from(clock.now().plus(SKEW)));
        }

        elect(aheadLocks(), behindLocks());
        MongoLocker c = open(behind, "c", clock);
        try (Lease next = c.acquire(lock, "re-creates the document behind")) {
            assertTrue(next.fencingToken() > last, "fencing tokens must strictly increase across the elections: A "
                    + "had " + last + ", C got " + next.fencingToken() + " (lower by " + (last - next.fencingToken())
                    + " us); the document B released on the member behind: " + released.toJson());
        }
    }

    /**
     * A's acquire on the member ahead stalls and fails; its take-back runs until the claim could no longer be live.
     * Only then does the stalled upsert land, writing the claim with the expiry A fixed on the clock ahead. After an
     * election to the member behind, that claim is already dead there: B takes the lock over at once.
     */
    @Test
    void aClaimLandingAfterItsTakeBackEndedIsDeadOnAMemberBehindByTheBound() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        mongo.clock().offset(SKEW);
        behind.clock().follow(clock);
        KeyColumn lock = lock("late-claim");
        try (FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port(), "findAndModify")) {
            MongoLocker a = openThrough("127.0.0.1:" + proxy.port(), "a", clock);
            a.acquire(lock("warm-up"), "marks the pooled connection").close();

            proxy.freezeMarked();
            assertThrows(TemporaryLockingException.class, () -> a.acquire(lock, "stalled upsert"));
            assertEquals(1, a.pendingTakeBacks(), "the claim of unknown outcome is being taken back");
            clock.advance(EXPIRY);
            for (int step = 0; a.pendingTakeBacks() > 0; step++) {
                assertTrue(step < 100, "the take-back never ended");
                clock.advance(Duration.ofMillis(100));
                // the take-back checks within its longest back-off (500 ms here); a later check only ends it later
                long until = System.nanoTime() + Duration.ofMillis(700).toNanos();
                while (a.pendingTakeBacks() > 0 && System.nanoTime() < until) {
                    Thread.sleep(20);
                }
            }

            proxy.thaw();
            await(() -> fixture.rawDoc(lock) != null, "A's stalled upsert lands and writes its claim");
            Document landed = fixture.rawDoc(lock);

            elect(aheadLocks(), behindLocks());
            MongoLocker b = open(behind, "b", clock);
            try (Lease taken = b.acquire(lock, "takes the dead late claim over")) {
                assertTrue(taken.fencingToken() > 0);
            } catch (TemporaryLockingException refused) {
                fail("the late claim, nobody's, still blocks the lock on the member behind after A's take-back "
                        + "ended: " + landed.toJson() + " at " + clock.now() + " behind; " + refused.getMessage());
            }
        }
    }
}
