package dev.locker.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockerConfig;
import dev.locker.api.TimeSource;
import org.bson.Document;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The set-up shared by MongoDB scenario classes: one in-process server per class, whose clock a case may make follow
 * a virtual clock. After each case its lockers close and the server's clock follows the system clock again. Nothing
 * is timed: every wait is a generous upper bound.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
abstract class MongoScenarios {

    /** The generous bound on every wait. */
    static final Duration PATIENCE = Duration.ofSeconds(30);

    MongoFixture fixture;
    InProcessMongo mongo;
    final ExecutorService pool = Executors.newCachedThreadPool();

    @BeforeAll
    void startServer() {
        String name = getClass().getSimpleName().toLowerCase(Locale.ROOT);
        fixture = MongoFixture.scenarios(name + "_" + LockerConfig.randomRid().substring(0, 8));
        mongo = fixture.server();
    }

    @AfterAll
    void stopServer() {
        pool.shutdownNow();
        fixture.close();
    }

    @AfterEach
    void closeOpened() throws Exception {
        fixture.closeOpened();
        mongo.clock().follow(TimeSource.system());
    }

    /** A locker's configuration with a rid of its own: {@code name} and a random suffix. */
    static LockerConfig.Builder config(String name, Duration expiry, TimeSource clock) {
        return LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8)).expiry(expiry)
                .timeSource(clock);
    }

    /** A locker straight to the server with a builder of its own (clock check interval, skew bound). */
    MongoLocker open(LockerConfig config, Duration clockCheckInterval) {
        return fixture.closeFirst(MongoLocker.builder().connectionString(mongo.uri()).database("locker")
                .collection(fixture.collection()).clockCheckInterval(clockCheckInterval).config(config).build());
    }

    /**
     * A locker on {@code server} through its URI, told the skew bound {@code serverClockSkew}, with a TTL grace of 0
     * and no clock checker.
     */
    MongoLocker openBounded(InProcessMongo server, Duration serverClockSkew, LockerConfig config) {
        String uri = server.uri() + "&lockerDatabase=locker&lockerCollection=" + fixture.collection()
                + "&lockerClockCheckIntervalMS=0&lockerTtlGraceSeconds=0&lockerServerClockSkewMS="
                + serverClockSkew.toMillis();
        return fixture.closeFirst(MongoLockerProvider.builder(uri).config(config).build());
    }

    /**
     * A client of its own through {@code address} (a proxy's): short timeouts, and retryable writes off. A stalled
     * request then fails its call, as when the driver's own retry failed too. It closes after the case's lockers.
     */
    MongoClient clientThrough(String address) {
        return fixture.closeLast(MongoClients.create(MongoClientSettings.builder()
                .applyConnectionString(new ConnectionString("mongodb://" + address + "/?serverSelectionTimeoutMS=3000"
                        + "&connectTimeoutMS=3000&socketTimeoutMS=500&retryWrites=false"))
                .build()));
    }

    MongoLocker openThrough(String address, LockerConfig config, CommandLog log) {
        return fixture.openThrough(address, config, log);
    }

    MongoLocker openDirect(LockerConfig config) {
        return fixture.openDirect(config);
    }

    Document rawDoc(KeyColumn lock) {
        return fixture.rawDoc(lock);
    }

    static void await(BooleanSupplier condition, String what) throws InterruptedException {
        MongoFixture.await(condition, what, PATIENCE);
    }
}
