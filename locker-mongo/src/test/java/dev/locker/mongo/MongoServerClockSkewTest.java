package dev.locker.mongo;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.VirtualClock;
import org.bson.Document;
import org.junit.jupiter.api.AfterAll;
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
 * Within serverClockSkew, an election that hands the primary to a member with another clock makes no second holder
 * and no lower token; the bound itself is refused before any I/O unless under half the expiry.
 *
 * <p>The old primary is the class's in-process server; the new one is a second in-process server whose clock is
 * shifted by the bound. An election is played by copying the lock collection from the first to the second, as the
 * promoted member would have it replicated, and by pointing a locker at the second.
 */
class MongoServerClockSkewTest extends MongoScenarios {

    private static final Duration SKEW = Duration.ofSeconds(2);
    private static final Duration EXPIRY = Duration.ofSeconds(10);

    /** The member an election promotes; its clock is set per case. */
    private InProcessMongo promoted;
    private MongoClient promotedAdmin;

    @BeforeAll
    void startPromoted() {
        promoted = InProcessMongo.start();
        promotedAdmin = MongoClients.create(promoted.uri());
    }

    @AfterAll
    void stopPromoted() {
        promotedAdmin.close();
        promoted.close();
    }

    /** A locker on {@code server} through its URI, telling it the bound, with a TTL grace of 0. */
    private MongoLocker open(InProcessMongo server, String name, VirtualClock clock) {
        return openBounded(server, SKEW, config(name, EXPIRY, clock).build());
    }

    private MongoCollection<Document> promotedLocks() {
        return promotedAdmin.getDatabase("locker").getCollection(fixture.collection());
    }

    /** The promoted member gets the old primary's lock collection as it was replicated to it. */
    private void replicate() {
        List<Document> docs = fixture.raw().find().into(new ArrayList<>());
        promotedLocks().deleteMany(new Document());
        if (!docs.isEmpty()) {
            promotedLocks().insertMany(docs);
        }
    }

    /**
     * One pass of the old primary's TTL monitor at its clock's {@code now}: it deletes the documents whose TTL field
     * is more than the index's expireAfterSeconds in the past, as mongod's TTL monitor does.
     */
    private void ttlMonitorPass(Date now) {
        long expireAfterSeconds = 0;
        for (Document index : fixture.raw().listIndexes()) {
            if (MongoLocker.TTL_INDEX.equals(index.getString("name"))) {
                expireAfterSeconds = ((Number) index.get("expireAfterSeconds")).longValue();
            }
        }
        fixture.raw().deleteMany(Filters.lt(LockDocument.EXPIRES_AT,
                new Date(now.getTime() - expireAfterSeconds * 1000)));
    }

    /**
     * The last holder released the lock on the old primary, and its TTL monitor deleted the document when allowed. A
     * new primary whose clock is behind by the bound then creates the document afresh: its token is still higher.
     */
    @Test
    void aNewPrimaryBehindByTheBoundIssuesNoLowerToken() throws Exception {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        promoted.clock().follow(clock);
        promoted.clock().offset(SKEW.negated());
        MongoLocker before = open(mongo, "before", clock);
        KeyColumn lock = lock("tokens");
        long last;
        try (Lease held = before.acquire(lock, "the last holder before the election")) {
            last = held.fencingToken();
        }
        Document released = fixture.rawDoc(lock);
        for (int pass = 0; fixture.rawDoc(lock) != null; pass++) {
            assertTrue(pass < 1000, "the TTL monitor never deleted " + fixture.rawDoc(lock).toJson());
            clock.advance(Duration.ofMillis(100));
            ttlMonitorPass(Date.from(clock.now()));
        }
        replicate();

        MongoLocker after = open(promoted, "after", clock);
        try (Lease next = after.acquire(lock, "the first holder after the election")) {
            assertTrue(next.fencingToken() > last, "fencing tokens must strictly increase across the election: the "
                    + "last holder had " + last + ", the new primary (clock " + SKEW + " behind) issued "
                    + next.fencingToken() + " (lower by " + (last - next.fencingToken()) + " us); the released "
                    + "document the TTL monitor deleted: " + released.toJson());
        }
    }

    /**
     * A holder granted on the old primary counts on its lease until just before its deadline. A new primary whose
     * clock is ahead by the bound still sees the claim live then, and refuses a second holder.
     */
    @Test
    void aHolderBelievesItsLeaseNoLongerThanAServerAheadByTheBoundAllows() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        promoted.clock().follow(clock);
        promoted.clock().offset(SKEW);
        MongoLocker first = open(mongo, "first", clock);
        KeyColumn lock = lock("granted");
        Lease held = first.acquire(lock, "granted before the election").keepAlive(false);
        replicate();

        assertSecondHolderRefusedUntilTheDeadline(held, first, open(promoted, "second", clock), lock, clock);
    }

    /** The same after a renewal: the renewed lease ends before a new primary ahead by the bound ends the claim. */
    @Test
    void aRenewedHolderBelievesItsLeaseNoLongerThanAServerAheadByTheBoundAllows() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        promoted.clock().follow(clock);
        promoted.clock().offset(SKEW);
        MongoLocker first = open(mongo, "first", clock);
        KeyColumn lock = lock("renewed");
        Lease held = first.acquire(lock, "renewed before the election").keepAlive(false);
        clock.advance(EXPIRY.dividedBy(3));
        held.renew();
        replicate();

        assertSecondHolderRefusedUntilTheDeadline(held, first, open(promoted, "second", clock), lock, clock);
    }

    private void assertSecondHolderRefusedUntilTheDeadline(Lease held, MongoLocker first, MongoLocker second,
                                                           KeyColumn lock, VirtualClock clock) {
        clock.advance(held.remaining().minusMillis(1));
        assertTrue(held.isValid(), "the holder still counts on its lease");
        try {
            Lease taken = second.acquire(lock, "after the election");
            fail("two holders: the first (token " + held.fencingToken() + ") counts on its lease for "
                    + held.remaining() + " more, and the new primary, " + SKEW + " ahead, granted token "
                    + taken.fencingToken() + " over the claim " + promotedLocks().find(Filters.eq("_id",
                    lock.legible())).first().toJson());
        } catch (TemporaryLockingException refused) {
            assertEquals(first.rid(), refused.holder().rid(), refused::getMessage);
        }
    }

    @Test
    void aBoundNotUnderHalfTheExpiryIsRefusedBeforeAnyIo() {
        // port 1: nothing listens, so a refusal that came from I/O would be about the connection instead
        LockerConfig tenSeconds = LockerConfig.builder().expiry(EXPIRY).build();
        IllegalArgumentException built = assertThrows(IllegalArgumentException.class, () -> MongoLocker.builder()
                .connectionString("mongodb://127.0.0.1:1/").config(tenSeconds).serverClockSkew(Duration.ofSeconds(5))
                .build());
        assertTrue(built.getMessage().contains("serverClockSkew PT5S must be less than half the expiry PT10S"),
                built::getMessage);
        IllegalArgumentException checked = assertThrows(IllegalArgumentException.class,
                () -> Lockers.check("mongodb://127.0.0.1:1/?expiry=10s&lockerServerClockSkewMS=6000",
                        LockerConfig.defaults()));
        assertTrue(checked.getMessage().contains("serverClockSkew PT6S must be less than half the expiry PT10S"),
                checked::getMessage);
        IllegalArgumentException opened = assertThrows(IllegalArgumentException.class,
                () -> Lockers.open("mongodb://127.0.0.1:1/?expiry=10s&lockerServerClockSkewMS=6000",
                        LockerConfig.defaults()));
        assertEquals(checked.getMessage(), opened.getMessage());
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class,
                () -> MongoLocker.builder().serverClockSkew(Duration.ofMillis(-1)));
        assertTrue(negative.getMessage().contains("serverClockSkew must not be negative"), negative::getMessage);
        IllegalArgumentException malformed = assertThrows(IllegalArgumentException.class,
                () -> Lockers.check("mongodb://127.0.0.1:1/?lockerServerClockSkewMS=2s", LockerConfig.defaults()));
        assertTrue(malformed.getMessage().contains("lockerServerClockSkewMS must be a whole number"),
                malformed::getMessage);
        assertEquals(EXPIRY, Lockers.check("mongodb://127.0.0.1:1/?expiry=10s&lockerServerClockSkewMS=4999",
                LockerConfig.defaults()).expiry(), "just under half the expiry is accepted");
    }
}
