package dev.locker.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.FaultProxy;
import dev.locker.testkit.LockerFixture;
import dev.locker.testkit.VirtualClock;
import org.bson.Document;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * The conformance suite's backend: either the in-process mongo-java-server (whose clock follows the scenario's
 * virtual clock, so that expiry can be driven by it), or an external real mongod (LOCKER_MONGO_URI, or a
 * Testcontainers {@code mongo:7}), where the server's clock is real and the suite uses the system clock.
 *
 * <p>Why expiry honestly follows the configured clock in-process: every expiry the locker writes or compares is
 * {@code timeSource.now() + measured offset}, and the in-process server's clock IS the scenario's virtual clock, so the
 * offset is zero and claims expire exactly when the virtual clock says. Against an external server the offset is real
 * and the virtual clock would drift away from it, so there the fixture says false.
 *
 * <p>The MongoDB scenario tests' scaffolding too ({@link #scenarios}): their own in-process server, an admin client
 * that reads the lock documents as they are, lockers opened directly or through a proxy's address (on a client of
 * their own), and everything a scenario opened closed after it, lockers before their clients.
 */
final class MongoFixture implements LockerFixture {

    private final InProcessMongo inProcess;
    private final String uri;
    private FaultProxy proxy;
    private final String database;
    private final String collection;
    private MongoClient admin;
    /** What a scenario opened, closed after it in this order (lockers first). */
    private final List<AutoCloseable> opened = new CopyOnWriteArrayList<>();

    private MongoFixture(InProcessMongo inProcess, String uri) {
        this(inProcess, uri, "locker_test", "conformance_" + LockerConfig.randomRid().substring(0, 8));
    }

    private MongoFixture(InProcessMongo inProcess, String uri, String database, String collection) {
        this.inProcess = inProcess;
        this.uri = uri;
        this.database = database;
        this.collection = collection;
    }

    /** Scenarios on an in-process server of their own, their lock documents in {@code locker.<collection>}. */
    static MongoFixture scenarios(String collection) {
        InProcessMongo m = InProcessMongo.start();
        return new MongoFixture(m, m.uri(), "locker", collection);
    }

    /** The in-process server. */
    InProcessMongo server() {
        return inProcess;
    }

    /** The collection of the lock documents. */
    String collection() {
        return collection;
    }

    /** The lock documents as they are, read on an admin client of the fixture's own. */
    synchronized MongoCollection<Document> raw() {
        if (admin == null) {
            admin = MongoClients.create(uri);
        }
        return admin.getDatabase(database).getCollection(collection);
    }

    /** The lock's document as it is, or null. */
    Document rawDoc(KeyColumn lock) {
        return raw().find(Filters.eq("_id", lock.legible())).first();
    }

    /** Closed after the scenario, after what is there already (a client, a proxy). */
    <T extends AutoCloseable> T closeLast(T c) {
        opened.add(c);
        return c;
    }

    /** Closed after the scenario, before everything else (a locker, before its client). */
    <T extends AutoCloseable> T closeFirst(T c) {
        opened.add(0, c);
        return c;
    }

    /** Closes what the scenario opened, best effort (a scenario may have closed or broken something itself). */
    void closeOpened() throws Exception {
        for (AutoCloseable c : opened) {
            try {
                c.close();
            } catch (RuntimeException e) {
                // best effort: a scenario may have closed it already
            }
        }
        opened.clear();
    }

    /** A locker on the server on a client of its own, whose commands {@code log} (if any) records. */
    MongoLocker openOwnClient(String address, String options, LockerConfig config, CommandLog log) {
        MongoClientSettings.Builder settings = MongoClientSettings.builder()
                .applyConnectionString(new ConnectionString("mongodb://" + address + "/" + options));
        if (log != null) {
            settings.addCommandListener(log);
        }
        MongoClient client = closeLast(MongoClients.create(settings.build()));
        return closeFirst(MongoLocker.builder().client(client).database(database).collection(collection)
                .config(config).build());
    }

    /**
     * A locker on a client of its own through {@code address} (a proxy's), with a short socket timeout; {@code log}
     * records its commands.
     */
    MongoLocker openThrough(String address, LockerConfig config, CommandLog log) {
        return openOwnClient(address, "?serverSelectionTimeoutMS=3000&connectTimeoutMS=3000&socketTimeoutMS=500",
                config, log);
    }

    /** A locker straight to the server, through the provider. */
    MongoLocker openDirect(LockerConfig config) {
        return closeFirst(MongoLockerProvider.builder(uri).database(database).collection(collection).config(config)
                .build());
    }

    /** A lock of its own: {@code name} and a random suffix, column "c". */
    static KeyColumn lock(String name) {
        return KeyColumn.of(name + "-" + LockerConfig.randomRid().substring(0, 8), "c");
    }

    /** Waits until {@code condition} holds, failing after {@code patience} (a generous bound, not a timing). */
    static void await(BooleanSupplier condition, String what, Duration patience) throws InterruptedException {
        long deadline = System.nanoTime() + patience.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                fail("not within " + patience + ": " + what);
            }
            Thread.sleep(20);
        }
    }

    /** The update commands {@code log} saw sent. */
    static long updatesSent(CommandLog log) {
        return log.sent().stream().filter(c -> c.containsKey("update")).count();
    }

    /** Whether a live thread has that name. */
    static boolean threadAlive(String name) {
        return Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals(name) && t.isAlive());
    }

    static MongoFixture inProcess() {
        InProcessMongo m = InProcessMongo.start();
        return new MongoFixture(m, m.uri());
    }

    /** A real server; the suite's lock documents go to database locker_test, a collection of their own. */
    static MongoFixture external(String uri) {
        return new MongoFixture(null, uri);
    }

    /** The URI the suite's environment names, or null: LOCKER_MONGO_URI. */
    static String externalUri() {
        String u = System.getenv("LOCKER_MONGO_URI");
        return u == null || u.isBlank() ? null : u;
    }

    @Override
    public Locker open(LockerConfig config) {
        if (inProcess != null) { // the server's clock is the scenario's: virtual, or the real one for lease cases
            inProcess.clock().follow(config.timeSource() instanceof VirtualClock ? config.timeSource()
                    : dev.locker.api.TimeSource.system());
        }
        return MongoLockerProvider.builder(uri).database("locker_test").collection(collection).config(config).build();
    }

    @Override
    public boolean expiryFollowsConfiguredClock() {
        return inProcess != null;
    }

    @Override
    public boolean canBreakBackend() {
        return inProcess != null;
    }

    @Override
    public void breakBackend() {
        inProcess.stop();
    }

    @Override
    public void repairBackend() {
        inProcess.restart();
    }

    @Override
    public boolean canLoseClaims() {
        return true;
    }

    /** Deletes the lock's document, as a failover to a secondary that never received it would. */
    @Override
    public void loseClaims(KeyColumn lock) {
        try (MongoClient client = MongoClients.create(uri)) {
            client.getDatabase("locker_test").getCollection(collection)
                    .deleteOne(Filters.eq(LockDocument.ID, LockDocument.id(lock)));
        }
    }

    @Override
    public boolean canFreezeConnections() {
        return inProcess != null;
    }

    @Override
    public synchronized Locker openFreezable(LockerConfig config) {
        inProcess.clock().follow(dev.locker.api.TimeSource.system());
        if (proxy == null) {
            proxy = new FaultProxy("127.0.0.1", inProcess.port());
        }
        String through = uri.replace(":" + inProcess.port() + "/", ":" + proxy.port() + "/");
        return MongoLockerProvider.builder(through).database("locker_test").collection(collection).config(config)
                .build();
    }

    @Override
    public void freezeConnections() {
        proxy.freeze();
    }

    @Override
    public void thawConnections() {
        proxy.thaw();
    }

    @Override
    public void close() {
        if (proxy != null) {
            proxy.close();
        }
        if (admin != null) {
            admin.close();
        }
        if (inProcess != null) {
            inProcess.close();
        } else {
            try (MongoClient c = MongoClients.create(uri)) {
                c.getDatabase("locker_test").getCollection(collection).drop();
            } catch (RuntimeException e) {
                // best effort: the collection only holds this run's lock documents
            }
        }
    }
}
