package dev.locker.mongo;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.model.Filters;
import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.FreezingProxy;
import dev.locker.testkit.LockerFixture;
import dev.locker.testkit.VirtualClock;

/**
 * The conformance suite's backend: either the in-process mongo-java-server (whose clock follows the scenario's
 * virtual clock, so that expiry can be driven by it), or an external real mongod (LOCKER_MONGO_URI, or a
 * Testcontainers {@code mongo:7}), where the server's clock is real and the suite uses the system clock.
 *
 * <p>Why expiry honestly follows the configured clock in-process: every expiry the locker writes or compares is
 * {@code timeSource.now() + measured offset}, and the in-process server's clock IS the scenario's virtual clock, so the
 * offset is zero and claims expire exactly when the virtual clock says. Against an external server the offset is real
 * and the virtual clock would drift away from it, so there the fixture says false.
 */
final class MongoFixture implements LockerFixture {

    private final InProcessMongo inProcess;
    private final String uri;
    private FreezingProxy proxy;
    private final String collection = "conformance_" + LockerConfig.randomRid().substring(0, 8);

    private MongoFixture(InProcessMongo inProcess, String uri) {
        this.inProcess = inProcess;
        this.uri = uri;
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
            proxy = new FreezingProxy("127.0.0.1", inProcess.port());
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
