package dev.locker.mongo;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
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
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Across several elections between two members whose clocks differ by exactly serverClockSkew, fencing tokens rise
 * even when the creating, releasing, deleting and re-creating writes each come from the worst of the two clocks.
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
        String uri = server.uri() + "&lockerDatabase=locker&lockerCollection=" + fixture.collection()
                + "&lockerClockCheckIntervalMS=0&lockerTtlGraceSeconds=0&lockerServerClockSkewMS=" + SKEW.toMillis();
        return fixture.closeFirst(MongoLockerProvider.builder(uri).config(config(name, EXPIRY, clock).build()).build());
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
}
