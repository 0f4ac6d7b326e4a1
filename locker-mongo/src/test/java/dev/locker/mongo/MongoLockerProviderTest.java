package dev.locker.mongo;

import com.mongodb.MongoCommandException;
import com.mongodb.MongoNotPrimaryException;
import com.mongodb.MongoSocketReadTimeoutException;
import com.mongodb.ReadConcern;
import com.mongodb.WriteConcern;
import com.mongodb.ServerAddress;
import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockerProvider;
import dev.locker.api.Lockers;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import org.bson.BsonDocument;
import org.bson.BsonInt32;
import org.bson.BsonString;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The mongodb:// provider: scheme registration, URI options, and how driver failures are classified. */
class MongoLockerProviderTest {

    @Test
    void bothSchemesAreRegistered() {
        Map<String, LockerProvider> providers = Lockers.providers();
        assertInstanceOf(MongoLockerProvider.class, providers.get("mongodb"));
        assertInstanceOf(MongoLockerProvider.class, providers.get("mongodb+srv"));
    }

    @Test
    void lockerOptionsAreTakenOutAndTheRestGoesToTheDriver() {
        MongoLockerProvider.Parsed p = MongoLockerProvider.parse("mongodb://u:p@h1:27017,h2/app?replicaSet=rs0"
                + "&lockerDatabase=locks_db&LOCKERCOLLECTION=my%20locks&w=majority&lockerMaxClockSkewMS=2000"
                + "&lockerClockCheckIntervalMS=0&lockerTtlGraceSeconds=60");
        assertEquals("mongodb://u:p@h1:27017,h2/app?replicaSet=rs0&w=majority", p.driverUri());
        assertEquals(Map.of("lockerdatabase", "locks_db", "lockercollection", "my locks", "lockermaxclockskewms", "2000",
                "lockerclockcheckintervalms", "0", "lockerttlgraceseconds", "60"), p.options());
        assertEquals("mongodb://h", MongoLockerProvider.parse("mongodb://h").driverUri());
        assertEquals("mongodb://h/", MongoLockerProvider.parse("mongodb://h/?lockerCollection=x").driverUri());
    }

    @Test
    void commonOptionsReachTheLockerConfigAndNotTheDriver() {
        String uri = "mongodb://h1/app?w=1&expiry=45s&retries=5&why=cron&rid=node-1&lockerCollection=x";
        assertEquals("mongodb://h1/app?w=1", MongoLockerProvider.parse(uri).driverUri());
        LockerConfig c = MongoLockerProvider.withCommonOptions(uri, LockerConfig.builder().expiry(Duration.ofSeconds(10)).build());
        assertEquals(Duration.ofSeconds(45), c.expiry());
        assertEquals(5, c.retries());
        assertEquals("cron", c.why());
        assertEquals("node-1", c.ridName());
        assertThrows(IllegalArgumentException.class, () -> MongoLockerProvider.parse("mongodb://h/?expiry=soon"));
    }

    @Test
    void badOptionsAreRefusedBeforeAnyConnection() {
        IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
                () -> MongoLockerProvider.builder("mongodb://h/?lockerColection=x"));
        assertTrue(unknown.getMessage().contains("lockerColection"), unknown.getMessage());
        assertThrows(IllegalArgumentException.class, () -> MongoLockerProvider.builder("mongodb://h/?lockerTtlGraceSeconds=soon"));
        assertThrows(IllegalArgumentException.class, () -> MongoLockerProvider.builder("mongodb://h/?lockerMaxClockSkewMS=-1"));
        assertThrows(IllegalArgumentException.class, () -> MongoLockerProvider.builder("mongodb://h/?lockerDatabase="));
        assertThrows(IllegalArgumentException.class, () -> MongoLockerProvider.builder("redis://h"));
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> Lockers.open("mongodb://user:secret@h:notaport", LockerConfig.defaults()));
        assertFalse(bad.getMessage().contains("secret"), "the password is not repeated: " + bad.getMessage());
        for (String uri : new String[]{"mongodb://user:Pw0/Sec+ret=@127.0.0.1:notaport/db",
                "mongodb://user:Pw0%zz@127.0.0.1/db", "mongodb://user:Pw0:x@127.0.0.1/db?lockerCollection=x&foo"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Lockers.open(uri, LockerConfig.defaults()), uri);
            for (Throwable t = e; t != null; t = t.getCause()) {
                assertFalse(t.getMessage().contains("Pw0"), "nor a piece of it, in the message or a cause: " + t);
            }
        }
    }

    @Test
    void databaseAndCollectionFromTheUri() {
        try (InProcessMongo mongo = InProcessMongo.start()) {
            try (Locker l = Lockers.open(mongo.uri() + "&lockerDatabase=ops&lockerCollection=mutexes")) {
                assertEquals("ops.mutexes", ((MongoLocker) l).namespace());
                l.acquire(KeyColumn.named("migration-7"), "uri options").close();
            }
            String withPath = "mongodb://" + mongo.address() + "/appdb?serverSelectionTimeoutMS=1000";
            try (Locker l = Lockers.open(withPath)) {
                assertEquals("appdb.locks", ((MongoLocker) l).namespace(), "the URI's database is the default");
            }
            try (Locker l = Lockers.open("mongodb://" + mongo.address())) {
                assertEquals("locker.locks", ((MongoLocker) l).namespace());
                assertTrue(l.toString().contains(mongo.address()), l.toString());
                assertEquals(WriteConcern.MAJORITY, ((MongoLocker) l).writeConcern(), "majority by default");
                assertEquals(ReadConcern.MAJORITY, ((MongoLocker) l).readConcern(), "majority by default");
            }
            try (Locker l = Lockers.open("mongodb://" + mongo.address() + "/?w=1&readConcernLevel=local")) {
                assertEquals(WriteConcern.W1, ((MongoLocker) l).writeConcern(), "the URI's own w wins");
                assertEquals(ReadConcern.LOCAL, ((MongoLocker) l).readConcern(), "the URI's own level wins");
            }
        }
    }

    /** A database name MongoDB refuses is an argument error found before any client exists (none is left behind). */
    @Test
    void aBadDatabaseNameIsRefusedBeforeAClientIsCreated() {
        try (InProcessMongo mongo = InProcessMongo.start()) {
            String port = String.valueOf(mongo.port());
            for (String bad : new String[] {"a.b", "my%20locks", "a%2Fb"}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> Lockers.open(mongo.uri() + "&lockerDatabase=" + bad));
                assertTrue(e.getMessage().contains("database"), e.getMessage());
            }
            java.util.List<String> leaked = Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                    .filter(n -> n.contains(":" + port)).toList();
            assertEquals(java.util.List.of(), leaked, "driver threads of clients nobody will close");
            assertThrows(IllegalArgumentException.class, () -> MongoLocker.builder().database("x y"));
        }
    }

    @Test
    void driverFailuresAreClassifiedAndNameTheServer() {
        ServerAddress member = new ServerAddress("db2.example", 27018);
        KeyColumn lock = KeyColumn.named("x");
        String server = "db1.example:27017,db2.example:27018";

        LockingException notPrimary = MongoErrors.translate(new MongoNotPrimaryException(
                error(10107, "NotWritablePrimary"), member), lock, "writing a claim", server);
        assertInstanceOf(TemporaryLockingException.class, notPrimary);
        assertTrue(notPrimary.getMessage().contains("not (or no longer) the writable primary"), notPrimary.getMessage());
        assertTrue(notPrimary.getMessage().contains(server), notPrimary.getMessage());

        LockingException shutdown = MongoErrors.translate(new MongoCommandException(
                error(91, "ShutdownInProgress"), member), lock, "renewing", server);
        assertInstanceOf(TemporaryLockingException.class, shutdown);

        LockingException unauthorized = MongoErrors.translate(new MongoCommandException(
                error(13, "Unauthorized"), member), lock, "writing a claim", server);
        assertInstanceOf(PermanentLockingException.class, unauthorized);
        assertTrue(unauthorized.getMessage().contains("not authorized"), unauthorized.getMessage());

        MongoSocketReadTimeoutException timeout = new MongoSocketReadTimeoutException("read timed out",
                new ServerAddress("db3.example", 27019), null);
        LockingException slow = MongoErrors.translate(timeout, lock, "writing a claim", server);
        assertInstanceOf(TemporaryLockingException.class, slow);
        assertTrue(slow.getMessage().contains("member db3.example:27019"), slow.getMessage());
        assertSame(timeout, slow.getCause());
        assertTrue(MongoErrors.mayHaveBeenApplied(timeout), "a read timeout leaves the write's fate unknown");

        LockingException unknown = MongoErrors.translate(new MongoCommandException(error(2, "BadValue"), member),
                lock, "writing a claim", server);
        assertInstanceOf(PermanentLockingException.class, unknown);
    }

    private static BsonDocument error(int code, String name) {
        return new BsonDocument("ok", new BsonInt32(0)).append("code", new BsonInt32(code))
                .append("codeName", new BsonString(name)).append("errmsg", new BsonString(name + " (test)"));
    }
}
