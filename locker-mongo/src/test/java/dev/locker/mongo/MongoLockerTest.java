package dev.locker.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.MongoTimeoutException;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.Updates;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockInfo;
import dev.locker.api.LockPage;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.FaultProxy;
import org.bson.BsonDocument;
import org.bson.BsonInt32;
import org.bson.Document;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

import static dev.locker.mongo.MongoFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * MongoDB-specific scenarios on a real in-process server (mongo-java-server) with the system clock: what the shared
 * suite cannot see — round trips, the document layout, the duplicate-key race, token monotonicity when the TTL
 * safety net deletes a document, and ownership under takeover.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MongoLockerTest {

    private MongoFixture fixture;
    private InProcessMongo mongo;

    @BeforeAll
    void start() {
        fixture = MongoFixture.scenarios("locks_" + LockerConfig.randomRid().substring(0, 8));
        mongo = fixture.server();
    }

    @AfterAll
    void stop() {
        fixture.close();
    }

    @AfterEach
    void closeAll() throws Exception {
        fixture.closeOpened();
    }

    private LockerConfig.Builder config(String name) {
        return LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8)).host("host-" + name)
                .pid(77).expiry(Duration.ofSeconds(60));
    }

    /** A locker on its own client, whose commands {@code log} records. */
    private MongoLocker open(LockerConfig config, CommandLog log, UnaryOperator<MongoLocker.Builder> tweak) {
        MongoClientSettings.Builder settings = MongoClientSettings.builder()
                .applyConnectionString(new ConnectionString(mongo.uri()));
        if (log != null) {
            settings.addCommandListener(log);
        }
        MongoClient client = fixture.closeLast(MongoClients.create(settings.build()));
        return fixture.closeFirst(tweak.apply(MongoLocker.builder().client(client).database("locker")
                .collection(fixture.collection()).config(config)).build());
    }

    private MongoLocker open(String name) {
        return open(config(name).build(), null, b -> b);
    }

    private MongoCollection<Document> raw() {
        return fixture.raw();
    }

    private Document rawDoc(KeyColumn lock) {
        return fixture.rawDoc(lock);
    }

    // ---- round trips and concerns ------------------------------------------------------------------------------

    @Test
    void uncontendedAcquireIsOneRoundTripReleaseOneRenewalOneRefusalTwo() {
        CommandLog logA = new CommandLog();
        CommandLog logB = new CommandLog();
        MongoLocker a = open(config("a").build(), logA, b -> b);
        MongoLocker b = open(config("b").build(), logB, x -> x);
        KeyColumn lock = lock("rt");

        logA.clear();
        Lease lease = a.acquire(lock, "one round trip");
        assertEquals(Map.of("findAndModify", 1), logA.counts(), "acquire = writeLock + checkLocks");
        BsonDocument fam = logA.sent().get(0);
        assertEquals("majority", fam.getDocument("writeConcern").getString("w").getValue(),
                "write concern majority by default: " + fam.toJson());

        logA.clear();
        lease.renew();
        assertEquals(Map.of("findAndModify", 1), logA.counts(), "renewal = one update that returns the grant's seq");

        logB.clear();
        assertThrows(TemporaryLockingException.class, () -> b.acquire(lock, "refused"));
        assertEquals(Map.of("find", 1, "findAndModify", 1), logB.counts(), "refusal = the upsert, then reading the holder");

        logB.clear();
        assertEquals(a.rid(), b.holder(lock).orElseThrow().rid());
        BsonDocument find = logB.sent().get(0);
        assertEquals("majority", find.getDocument("readConcern").getString("level").getValue(),
                "read concern majority by default: " + find.toJson());

        logA.clear();
        lease.close();
        assertEquals(Map.of("update", 1), logA.counts());
    }

    @Test
    void writeAndReadConcernsAreConfigurable() {
        CommandLog log = new CommandLog();
        MongoLocker a = open(config("a").build(), log, b -> b.writeConcern(com.mongodb.WriteConcern.W1)
                .readConcern(com.mongodb.ReadConcern.LOCAL));
        KeyColumn lock = lock("wc");
        log.clear();
        a.acquire(lock, "w1").close();
        a.holder(lock);
        BsonDocument fam = log.sent().get(0);
        assertEquals(1, fam.getDocument("writeConcern").getInt32("w").getValue(), fam.toJson());
        BsonDocument find = log.sent().get(log.sent().size() - 1);
        assertEquals("local", find.getDocument("readConcern").getString("level").getValue(), find.toJson());
    }

    // ---- the document ----------------------------------------------------------------------------------------

    @Test
    void oneDocumentPerLockWithALegibleIdAndOwnerMetadata() throws Exception {
        MongoLocker a = open("a");
        KeyColumn lock = lock("layout");
        LockTransaction tx = new LockTransaction("rebuild index");
        a.writeLock(lock, tx);
        a.checkLocks(tx);
        long token = a.fencingToken(lock, tx);

        Document doc = rawDoc(lock);
        assertNotNull(doc);
        assertEquals(lock.legible(), doc.get("_id"), "the _id is KeyColumn.legible(), as mongosh shows it");
        assertEquals(Set.of("_id", "seq", "tokenBase", "expiresAt", "holder"), doc.keySet());
        assertEquals(1L, doc.getLong("seq"));
        assertEquals(token, doc.getLong("tokenBase") + doc.getLong("seq"));
        Document h = doc.get("holder", Document.class);
        assertEquals(Set.of("claim", "rid", "host", "pid", "thread", "why", "acquiredAt", "renewedAt", "expiresAt"),
                h.keySet());
        assertEquals(a.rid(), h.getString("rid"));
        assertEquals("host-a", h.getString("host"));
        assertEquals(77L, ((Number) h.get("pid")).longValue());
        assertEquals(Thread.currentThread().getName(), h.getString("thread"));
        assertEquals("rebuild index", h.getString("why"));
        assertEquals(h.getDate("expiresAt"), doc.getDate("expiresAt"), "the TTL field follows the holder's expiry");
        assertEquals(h.getDate("acquiredAt"), h.getDate("renewedAt"));

        Thread.sleep(5);
        a.renewLocks(tx);
        Document renewed = rawDoc(lock).get("holder", Document.class);
        assertTrue(renewed.getDate("renewedAt").after(renewed.getDate("acquiredAt")), renewed.toJson());
        assertTrue(renewed.getDate("expiresAt").after(h.getDate("expiresAt")), renewed.toJson());
        assertEquals(h.get("claim"), renewed.get("claim"), "renewal keeps the claim");

        a.deleteLocks(tx);
        Document released = rawDoc(lock);
        assertNull(released.get("holder"), "release unsets the holder");
        assertEquals(1L, released.getLong("seq"), "and keeps the counter");
    }

    @Test
    void hostileNamesAreIndependentLocks() {
        MongoLocker a = open("a");
        MongoLocker b = open("b");
        String p = LockerConfig.randomRid().substring(0, 6);
        List<KeyColumn> names = List.of(KeyColumn.of(p + "$ne", ""), KeyColumn.of("$ne", p),
                KeyColumn.of(p + "a.b", "c"), KeyColumn.of(p + "a", "b"), KeyColumn.of(p + "{\"$gt\": \"\"}", ""),
                KeyColumn.of(p + "{\"$where\": \"sleep(1000)\"}", "$set"), KeyColumn.of(p + "a", ""));
        List<Lease> leases = new ArrayList<>();
        for (KeyColumn n : names) {
            leases.add(a.acquire(n, "hostile"));
        }
        for (KeyColumn n : names) {
            TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> b.acquire(n, "too"));
            assertEquals(a.rid(), e.holder().rid(), "holder of " + n);
            assertEquals(n, KeyColumn.fromLegible((String) rawDoc(n).get("_id")));
        }
        leases.get(0).close(); // freeing "$ne" frees nothing else
        b.acquire(names.get(0), "now mine").close();
        for (KeyColumn n : names.subList(1, names.size())) {
            assertEquals(a.rid(), b.holder(n).orElseThrow().rid(), n.toString());
        }
        for (Document d : raw().find()) {
            Set<String> fields = d.get("_id") instanceof Document
                    ? Set.of("_id", "done", "doneToken", "forced") // a lock's records (run once, forced release)
                    : Set.of("_id", "seq", "tokenBase", "expiresAt", "holder");
            assertTrue(fields.containsAll(d.keySet()), "no field is named after a lock: " + d.keySet());
        }
    }

    // ---- races ---------------------------------------------------------------------------------------------

    /** 8 processes race to create the same new lock document: one wins, 7 see "taken" (11000 is never an error). */
    @Test
    void eightThreadsRaceOnTheUpsert() throws Exception {
        int n = 8;
        CommandLog log = new CommandLog();
        List<MongoLocker> lockers = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            lockers.add(open(config("p" + i).build(), log, b -> b));
        }
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            for (int round = 0; round < 10; round++) {
                KeyColumn lock = lock("race-" + round);
                CyclicBarrier barrier = new CyclicBarrier(n);
                List<Future<Object>> results = new ArrayList<>();
                for (MongoLocker l : lockers) {
                    results.add(pool.submit(() -> {
                        barrier.await(10, TimeUnit.SECONDS);
                        try {
                            return l.acquire(lock, "race");
                        } catch (LockingException e) {
                            return e;
                        }
                    }));
                }
                List<Lease> winners = new ArrayList<>();
                List<TemporaryLockingException> losers = new ArrayList<>();
                for (Future<Object> f : results) {
                    Object r = f.get(30, TimeUnit.SECONDS);
                    if (r instanceof Lease) {
                        winners.add((Lease) r);
                    } else {
                        losers.add(assertInstanceOf(TemporaryLockingException.class, r, "a loser's failure: " + r));
                    }
                }
                assertEquals(1, winners.size(), "exactly one winner in round " + round);
                String winner = lockers.get(0).holder(lock).orElseThrow().rid();
                for (TemporaryLockingException e : losers) {
                    assertNotNull(e.holder(), e.getMessage());
                    assertEquals(winner, e.holder().rid(), e.getMessage());
                }
                assertEquals(1L, rawDoc(lock).getLong("seq"), "losers do not bump the counter");
                winners.get(0).close();
            }
        } finally {
            pool.shutdownNow();
        }
        assertTrue(log.duplicateKeys() >= 7 * 10, "every loser met the duplicate key: " + log.duplicateKeys());
        assertEquals(Set.of(11000), Set.copyOf(log.errorCodes()), "no other server error: " + log.errorCodes());
    }

    // ---- tokens ----------------------------------------------------------------------------------------------

    @Test
    void tokensKeepIncreasingWhenTheTtlSafetyNetDeletesTheDocument() {
        MongoLocker a = open("a");
        MongoLocker op = open("operator");
        KeyColumn lock = lock("ttl");
        long last = 0;
        for (int i = 0; i < 5; i++) {
            try (Lease l = a.acquire(lock, "round " + i)) {
                assertTrue(l.fencingToken() > last);
                last = l.fencingToken();
            }
        }
        Lease forced = a.acquire(lock, "force-released");
        assertTrue(forced.fencingToken() > last);
        last = forced.fencingToken();
        assertTrue(op.forceRelease(lock));
        forced.close();
        assertEquals(6L, rawDoc(lock).getLong("seq"), "a forced release keeps the document and its counter");

        // what the TTL monitor (or an operator) does to a document past its expiry + grace
        assertEquals(1, raw().deleteOne(Filters.eq("_id", lock.legible())).getDeletedCount());
        try (Lease l = a.acquire(lock, "after deletion")) {
            assertTrue(l.fencingToken() > last, l.fencingToken() + " after " + last);
        }
    }

    @Test
    void ttlIndexIsCreatedAtStartIdempotently() {
        open("a");
        open("b"); // second start: same index, no error
        Document ttl = null;
        for (Document ix : raw().listIndexes()) {
            if (MongoLocker.TTL_INDEX.equals(ix.getString("name"))) {
                ttl = ix;
            }
        }
        assertNotNull(ttl, "TTL index exists");
        assertEquals(new Document("expiresAt", 1), ttl.get("key", Document.class));
        assertEquals(3600L, ((Number) ttl.get("expireAfterSeconds")).longValue());
        // a locker configured with another grace keeps the existing index and still works
        MongoLocker c = open(config("c").build(), null, b -> b.ttlGrace(Duration.ofSeconds(60)));
        c.acquire(lock("after-conflict"), "works").close();
    }

    // ---- scrubbing and ownership -----------------------------------------------------------------------------

    @Test
    void aDeadClaimIsScrubbedByWhoeverMeetsIt() throws Exception {
        MongoLocker a = open(config("a").expiry(Duration.ofMillis(200)).build(), null, b -> b);
        MongoLocker viewer = open("viewer");
        KeyColumn lock = lock("scrub");
        a.writeLock(lock, new Object()); // a "crashes" without releasing
        Thread.sleep(400);
        assertTrue(viewer.holder(lock).isEmpty(), "a dead claim holds nothing");
        Document doc = rawDoc(lock);
        assertNull(doc.get("holder"), "holder() scrubbed the dead claim: " + doc.toJson());
        assertEquals(1L, doc.getLong("seq"));
    }

    @Test
    void aTakenOverClaimCannotBeRenewedOrReleasedByItsFormerOwner() throws Exception {
        // an expiry a loaded machine's first write cannot outlast, yet short enough to wait out
        MongoLocker a = open(config("a").expiry(Duration.ofSeconds(2)).build(), null, b -> b);
        MongoLocker b = open("b");
        KeyColumn lock = lock("takeover");
        Object ta = new Object();
        a.writeLock(lock, ta);
        Thread.sleep(2_500);
        Lease lb = b.acquire(lock, "takeover");
        assertThrows(dev.locker.api.ExpiredLockException.class, () -> a.renewLocks(ta));
        a.deleteLocks(ta); // by claim id: never b's claim
        assertEquals(b.rid(), a.holder(lock).orElseThrow().rid());
        lb.renew();
        lb.close();
    }

    // ---- outages and errors ------------------------------------------------------------------------------------

    @Test
    void serverStopAndRestart() {
        InProcessMongo own = InProcessMongo.start();
        fixture.closeLast(own);
        MongoLocker a = MongoLockerProvider.builder(own.uri()).config(config("a").build()).build();
        fixture.closeFirst(a);
        KeyColumn held = lock("held");
        Lease lease = a.acquire(held, "before the outage");
        long before = lease.fencingToken();

        own.stop();
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                () -> a.acquire(lock("other"), "during the outage"));
        assertTrue(e.getMessage().contains(own.address()), "names the server: " + e.getMessage());
        // the pooled connection was cut (MongoSocketReadException) or no server could be selected (MongoTimeoutException)
        assertInstanceOf(com.mongodb.MongoException.class, e.getCause());
        lease.close(); // logs, never throws
        assertThrows(TemporaryLockingException.class, () -> a.acquire(lock("third"), "still down"));

        own.restart(); // a fresh in-memory server: the lock documents are gone
        try (Lease after = a.acquire(held, "after the restart")) {
            assertTrue(after.fencingToken() > before, "token after data loss " + after.fencingToken() + " > " + before);
            assertEquals(a.rid(), a.holder(held).orElseThrow().rid());
        }
    }

    @Test
    void anUnreachableServerFailsTheOpenNamingIt() throws Exception {
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        String uri = "mongodb://127.0.0.1:" + port + "/?serverSelectionTimeoutMS=500";
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                () -> dev.locker.api.Lockers.open(uri, config("a").build()));
        assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
        assertTrue(e.getMessage().contains("unreachable"), e.getMessage());
        assertInstanceOf(MongoTimeoutException.class, e.getCause());
    }

    /**
     * mongo-java-server implements no authentication: it answers the driver's SASL handshake with "no such command",
     * which the driver reports as an authentication failure (MongoSecurityException), as it does for a wrong password
     * on a real mongod. What is verified here is that this failure is permanent, clear and names the server.
     */
    @Test
    void anAuthenticationFailureIsPermanentAndNamesTheServer() {
        String uri = "mongodb://locker:wrong@" + mongo.address() + "/?authSource=admin&serverSelectionTimeoutMS=1000";
        dev.locker.api.PermanentLockingException e = assertThrows(dev.locker.api.PermanentLockingException.class,
                () -> dev.locker.api.Lockers.open(uri, config("a").build()));
        assertTrue(e.getMessage().contains(mongo.address()), e.getMessage());
        assertTrue(e.getMessage().contains("authentication"), e.getMessage());
        assertFalse(e.getMessage().contains("wrong"), "no password in the message: " + e.getMessage());
        assertInstanceOf(com.mongodb.MongoSecurityException.class, e.getCause());
    }

    @Test
    void aStaleLockerCannotSeeDeletedDocumentsAsHeld() {
        MongoLocker a = open("a");
        KeyColumn lock = lock("gone");
        Object tx = new Object();
        a.writeLock(lock, tx);
        raw().deleteOne(Filters.eq("_id", lock.legible()));
        assertThrows(dev.locker.api.ExpiredLockException.class, () -> a.renewLocks(tx));
        a.deleteLocks(tx);
        assertTrue(a.holder(lock).isEmpty());
        assertNull(rawDoc(lock), "releasing a vanished claim creates nothing");
    }

    // ---- lost replies ----------------------------------------------------------------------------------------

    /** The acquire was applied but its reply lost: the retry (same claim id) recognises the claim as ours. */
    @Test
    void aLostReplyIsRecognisedOnRetryAsOurOwnClaim() throws Exception {
        FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port());
        fixture.closeLast(proxy);
        MongoLocker a = MongoLockerProvider.builder("mongodb://" + proxy.address() + "/?serverSelectionTimeoutMS=2000")
                .collection(fixture.collection()).config(config("a").retries(3).build()).build();
        fixture.closeFirst(a);
        KeyColumn lock = lock("lost-reply");
        proxy.cutRepliesToRequestsCarrying("findAndModify", 1);
        try (Lease lease = a.acquire(lock, "reply lost once")) {
            assertEquals(1, proxy.cutReplies(), "the first reply was cut");
            Document doc = rawDoc(lock);
            assertEquals(1L, doc.getLong("seq"), "one grant only: the retry did not take the lock a second time");
            assertEquals(doc.getLong("tokenBase") + 1, lease.fencingToken());
            assertEquals(a.rid(), a.holder(lock).orElseThrow().rid());
        }
        assertTrue(a.holder(lock).isEmpty());
    }

    /**
     * One connection in the pool: B's acquire waits for it while A's acquire is in flight on it; then A's connection
     * is cut. The driver clears the pool and fails B's checkout with MongoConnectionPoolClearedException — a
     * temporary failure that the next attempt overcomes, not a permanent one.
     */
    @Test
    void aClearedConnectionPoolIsRetried() throws Exception {
        FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port());
        fixture.closeLast(proxy);
        MongoLocker l = MongoLockerProvider.builder("mongodb://" + proxy.address()
                        + "/?serverSelectionTimeoutMS=2000&maxPoolSize=1&waitQueueTimeoutMS=20000")
                .collection(fixture.collection()).config(config("l").retries(3).build()).build();
        fixture.closeFirst(l);
        KeyColumn first = lock("in-flight");
        KeyColumn second = lock("waiting");
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            proxy.stallThenCutReplyToRequestCarrying("findAndModify");
            Future<Lease> a = pool.submit(() -> l.acquire(first, "in flight when cut"));
            proxy.awaitStalledReply();
            Thread[] waiter = new Thread[1];
            Future<Lease> b = pool.submit(() -> {
                waiter[0] = Thread.currentThread();
                return l.acquire(second, "waits for the connection");
            });
            while (waiter[0] == null || (waiter[0].getState() != Thread.State.WAITING
                    && waiter[0].getState() != Thread.State.TIMED_WAITING)) {
                Thread.sleep(5); // until B waits for the pooled connection
            }
            proxy.releaseStalledReply();
            try (Lease la = a.get(30, TimeUnit.SECONDS); Lease lb = b.get(30, TimeUnit.SECONDS)) {
                assertEquals(1, proxy.cutReplies());
                assertEquals(l.rid(), l.holder(first).orElseThrow().rid());
                assertEquals(l.rid(), l.holder(second).orElseThrow().rid());
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * The driver's operation timeout (timeoutMS) expires while the acquire's reply is held back, after the server
     * applied it: the failure is temporary, does not claim the server is unreachable, and the claim that was written
     * is taken back.
     */
    @Test
    void anOperationTimeoutAfterTheWriteTakesTheClaimBack() throws Exception {
        FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port());
        fixture.closeLast(proxy);
        // timeoutMS leaves room for opening the collection on a loaded host
        MongoLocker a = MongoLockerProvider.builder("mongodb://" + proxy.address()
                        + "/?serverSelectionTimeoutMS=2000&timeoutMS=1500")
                .collection(fixture.collection()).config(config("a").retries(3).build()).build();
        fixture.closeFirst(a);
        KeyColumn lock = lock("timed-out");
        proxy.stallThenCutReplyToRequestCarrying("findAndModify");
        try {
            TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> a.acquire(lock, "slow"));
            assertInstanceOf(com.mongodb.MongoOperationTimeoutException.class, e.getCause(), e.toString());
            assertFalse(e.getMessage().contains("unreachable"), e.getMessage());
        } finally {
            proxy.releaseStalledReply();
        }
        assertTakenBack(lock);
    }

    /** Out of attempts after an ambiguous failure: the claim that may have been written is taken back. */
    @Test
    void aClaimWhoseReplyWasLostIsTakenBackWhenGivingUp() throws Exception {
        FaultProxy proxy = new FaultProxy("127.0.0.1", mongo.port());
        fixture.closeLast(proxy);
        MongoLocker a = MongoLockerProvider.builder("mongodb://" + proxy.address() + "/?serverSelectionTimeoutMS=2000")
                .collection(fixture.collection()).config(config("a").retries(1).build()).build();
        fixture.closeFirst(a);
        KeyColumn lock = lock("given-up");
        proxy.cutRepliesToRequestsCarrying("findAndModify", 1);
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> a.acquire(lock, "lost"));
        assertTrue(e.getMessage().contains(proxy.address()), e.getMessage());
        assertInstanceOf(com.mongodb.MongoSocketException.class, e.getCause());
        assertTakenBack(lock);
        MongoLocker b = open("b");
        b.acquire(lock, "free once taken back").close();
    }

    /** The claim that had been written is taken back by the locker's background task (a generous bound). */
    private void assertTakenBack(KeyColumn lock) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        Document doc = rawDoc(lock);
        while (doc == null || doc.get("holder") != null) {
            assertTrue(System.nanoTime() - deadline < 0, "the written claim was not taken back: "
                    + (doc == null ? "the write was not applied" : doc.toJson()));
            Thread.sleep(20);
            doc = rawDoc(lock);
        }
    }

    // ---- listing ------------------------------------------------------------------------------------------------

    /** A page of the empty prefix is one find: in _id order, only holders alive on the server clock, at most limit. */
    @Test
    void aListingPageIsOneFindOfLiveHoldersInIdOrder() {
        CommandLog log = new CommandLog();
        MongoLocker viewer = open(config("viewer").build(), log, b -> b);
        MongoLocker a = open("a");
        List<KeyColumn> held = List.of(lock("l1"), lock("l2"), lock("l3"));
        for (KeyColumn l : held) {
            a.acquire(l, "listed");
        }
        KeyColumn dead = lock("dead");
        a.acquire(dead, "crashed");
        raw().updateOne(Filters.eq("_id", dead.legible()),
                Updates.set("holder.expiresAt", new Date(0))); // expired long ago, never scrubbed
        log.clear();
        LockPage page = viewer.list("", Locker.MAX_LIST_LIMIT, null);
        assertEquals(Map.of("find", 1), log.counts(), "one round trip for a page");
        BsonDocument find = log.sent().get(0);
        assertEquals(new BsonDocument("_id", new BsonInt32(1)), find.getDocument("sort"), find.toJson());
        assertEquals(Locker.MAX_LIST_LIMIT, find.getNumber("limit").intValue(), find.toJson());
        assertTrue(find.getDocument("filter").toJson().contains("holder.expiresAt"), find.toJson());
        assertTrue(page.nextCursor().isEmpty(), "everything fit in one page");
        Set<KeyColumn> listed = new HashSet<>(page.locks().stream().map(LockInfo::lock).toList());
        assertTrue(listed.containsAll(held), listed.toString());
        assertFalse(listed.contains(dead), "a dead holder is not listed");
    }

    /**
     * A lock's _id is its legible name, which keeps key prefixes, so a prefix listing is an _id range: one find reads
     * the locks inside the prefix and none of the 20 outside it.
     */
    @Test
    void aPrefixListingIsOneRangeFind() {
        CommandLog log = new CommandLog();
        MongoLocker viewer = open(config("viewer").build(), log, b -> b);
        MongoLocker a = open("a");
        String scenario = "prefix-" + LockerConfig.randomRid().substring(0, 8) + "/";
        for (int i = 0; i < 20; i++) {
            a.acquire(KeyColumn.of("o" + i, "c"), "outside");
            a.acquire(KeyColumn.of(scenario.substring(0, scenario.length() - 1) + "." + i, "c"), "a near miss");
        }
        KeyColumn inside = KeyColumn.of(scenario + "inside-with-a-long-name", "c");
        KeyColumn odd = KeyColumn.of(scenario + "odd #%{} \u00e9", "c");
        a.acquire(inside, "inside");
        a.acquire(odd, "inside too");
        log.clear();
        LockPage page = viewer.list(scenario, Locker.MAX_LIST_LIMIT, null);
        assertEquals(Map.of("find", 1), log.counts(), "one round trip");
        assertEquals(Set.of(inside, odd), new HashSet<>(page.locks().stream().map(LockInfo::lock).toList()));
        assertTrue(page.nextCursor().isEmpty());
        List<KeyColumn> found = new ArrayList<>();
        String cursor = null;
        do { // one lock per page: the cursor goes on from the last _id
            LockPage one = viewer.list(scenario, 1, cursor);
            one.locks().forEach(info -> found.add(info.lock()));
            cursor = one.nextCursor().orElse(null);
        } while (cursor != null && found.size() < 10);
        assertEquals(Set.of(inside, odd), new HashSet<>(found));
        assertEquals(2, found.size(), "each listed once");
    }
}
