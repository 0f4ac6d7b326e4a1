package dev.locker.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.MongoException;
import com.mongodb.ReadConcern;
import com.mongodb.ReadConcernLevel;
import com.mongodb.WriteConcern;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoDatabase;
import dev.locker.spi.DeploymentCheck;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import org.bson.Document;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The {@code mongodb://} deployment checks ({@code locker doctor}), judged with the URI's own options and read-only
 * (it opens a client of its own, never a locker, so it creates no index):
 * <ul>
 *   <li>{@code server}: version, replica set or standalone;</li>
 *   <li>{@code write-concern}: below majority on a replica set, a failover can roll back a grant (FAIL);</li>
 *   <li>{@code read-concern}: below majority, holder reads and verifications may see a grant a failover rolls back;</li>
 *   <li>{@code clock}: this host's offset to the server's clock and its uncertainty, measured like
 *       {@link MongoLocker} does ({@code ServerClock}), against {@code lockerMaxClockSkewMS};</li>
 *   <li>{@code ttl-index}: the safety net on {@code expiresAt} of the lock collection.</li>
 * </ul>
 */
public final class MongoDoctor implements DeploymentCheck {

    private static final Duration DEFAULT_MAX_SKEW = Duration.ofSeconds(10);
    private static final Duration SLOW_MEASUREMENT = Duration.ofMillis(250);

    @Override
    public Set<String> schemes() {
        return Set.of("mongodb", "mongodb+srv");
    }

    @Override
    public List<Finding> check(String uri, Consumer<String> progress) {
        MongoLockerProvider.Parsed p = MongoLockerProvider.parse(uri); // a malformed URI fails here, before any I/O
        ConnectionString cs = new ConnectionString(p.driverUri());
        String database = p.options().getOrDefault(MongoLockerProvider.DATABASE,
                cs.getDatabase() != null ? cs.getDatabase() : "locker");
        String collection = p.options().getOrDefault(MongoLockerProvider.COLLECTION, "locks");
        Duration maxSkew = p.options().containsKey(MongoLockerProvider.MAX_CLOCK_SKEW)
                ? Duration.ofMillis(Long.parseLong(p.options().get(MongoLockerProvider.MAX_CLOCK_SKEW))) : DEFAULT_MAX_SKEW;
        String server = cs.isSrvProtocol() ? "mongodb+srv://" + cs.getHosts().get(0) : String.join(",", cs.getHosts());
        MongoClientSettings.Builder settings = MongoClientSettings.builder().applyConnectionString(cs)
                .applicationName("locker-doctor");
        if (cs.getServerSelectionTimeout() == null) {
            settings.applyToClusterSettings(c -> c.serverSelectionTimeout(3, TimeUnit.SECONDS));
        }
        progress.accept("connecting to MongoDB " + server);
        List<Finding> out = new ArrayList<>();
        try (MongoClient client = MongoClients.create(settings.build())) {
            MongoDatabase admin = client.getDatabase("admin");
            ServerClock clock = new ServerClock(TimeSource.system(), admin, maxSkew);
            ServerClock.Sample sample;
            try {
                sample = clock.measure(); // the first one pays for the connection: keep the tightest of three
                for (int i = 0; i < 2; i++) {
                    ServerClock.Sample again = clock.measure();
                    if (again.uncertainty().compareTo(sample.uncertainty()) < 0) {
                        sample = again;
                    }
                }
            } catch (MongoException e) {
                LockingException t = MongoErrors.translate(e, null, "checking the deployment", server);
                throw t != null ? t : new TemporaryLockingException("checking the deployment on MongoDB " + server
                        + " failed: " + e.getMessage(), null, null, e);
            }
            Document hello = hello(admin);
            boolean replicaSet = hello.get("setName") != null;
            progress.accept("reading the server's status");
            out.add(server(admin, hello, replicaSet));
            out.add(writeConcern(cs.getWriteConcern() != null ? cs.getWriteConcern() : WriteConcern.MAJORITY, replicaSet));
            out.add(readConcern(cs.getReadConcern() != null ? cs.getReadConcern() : ReadConcern.MAJORITY, replicaSet));
            out.add(clock(sample, maxSkew));
            progress.accept("reading the indexes of " + database + "." + collection);
            out.add(ttlIndex(client.getDatabase(database), database + "." + collection, collection));
        }
        return out;
    }

    private static Document hello(MongoDatabase admin) {
        try {
            return admin.runCommand(new Document("hello", 1));
        } catch (MongoException e) {
            return admin.runCommand(new Document("isMaster", 1));
        }
    }

    private static Finding server(MongoDatabase admin, Document hello, boolean replicaSet) {
        String version = "?";
        try {
            version = String.valueOf(admin.runCommand(new Document("buildInfo", 1)).get("version"));
        } catch (MongoException ignored) {
            // not allowed or not known: the version stays unknown
        }
        if (replicaSet) {
            return Finding.ok("server", "MongoDB " + version + ", replica set " + hello.get("setName")
                    + (Boolean.TRUE.equals(hello.get("isWritablePrimary")) || Boolean.TRUE.equals(hello.get("ismaster"))
                    ? " (connected to its primary)" : ""));
        }
        return Finding.warn("server", "MongoDB " + version + ", standalone: no failover, so locks stop while it is "
                + "down (and a crash keeps only journaled writes)", "run a replica set (3 members) for locks that "
                + "outlive one server");
    }

    private static Finding writeConcern(WriteConcern wc, boolean replicaSet) {
        Object w = wc.getWObject();
        boolean majority = "majority".equals(w) || w instanceof Integer n && n > 1;
        String what = "write concern w=" + (w == null ? "default (1)" : w)
                + (Boolean.FALSE.equals(wc.getJournal()) ? ", j=false" : "");
        if (Boolean.FALSE.equals(wc.getJournal())) {
            return Finding.fail("write-concern", what + ": a grant acknowledged before it reached the journal can be "
                    + "lost in a crash, and granted again", "drop journal=false from the URI");
        }
        if (!replicaSet || majority) {
            return Finding.ok("write-concern", what + (replicaSet ? ": a grant survives a failover" : ""));
        }
        return Finding.fail("write-concern", what + " on a replica set: a failover can roll back a grant that its "
                + "holder was told about, and grant the lock to another process", "drop w= from the URI (Locker's "
                + "default is w=majority) or set w=majority");
    }

    private static Finding readConcern(ReadConcern rc, boolean replicaSet) {
        ReadConcernLevel level = rc.getLevel();
        String what = "read concern " + (level == null ? "server default (local)" : level.getValue());
        if (!replicaSet || level == ReadConcernLevel.MAJORITY || level == ReadConcernLevel.LINEARIZABLE) {
            return Finding.ok("read-concern", what);
        }
        return Finding.warn("read-concern", what + ": holder reads, listings and verifications may report a grant "
                + "that a failover then rolls back", "drop readConcernLevel from the URI (Locker's default is majority)");
    }

    private static Finding clock(ServerClock.Sample s, Duration maxSkew) {
        String what = "this host's clock is " + millis(s.offset()) + " off the server's (measured ± "
                + s.uncertainty().toMillis() + " ms; lockerMaxClockSkewMS=" + maxSkew.toMillis() + ")";
        if (s.offset().abs().compareTo(maxSkew) > 0) {
            return Finding.fail("clock", what + ": lockers on this host will not take over expired locks until the "
                    + "clocks agree", "sync this host's clock (NTP/chrony) with the MongoDB servers'");
        }
        if (s.offset().abs().compareTo(maxSkew.dividedBy(2)) > 0) {
            return Finding.warn("clock", what + ": close to the limit", "sync this host's clock (NTP/chrony)");
        }
        if (s.uncertainty().compareTo(SLOW_MEASUREMENT) > 0) {
            return Finding.warn("clock", what + ": the round trip is slow, and every holder's validity is shortened "
                    + "by the uncertainty", "run the lockers closer to the server");
        }
        return Finding.ok("clock", what);
    }

    private static Finding ttlIndex(MongoDatabase db, String namespace, String collection) {
        boolean exists = false;
        for (String name : db.listCollectionNames()) {
            exists |= name.equals(collection);
        }
        if (!exists) {
            return Finding.ok("ttl-index", namespace + " does not exist yet: the first locker creates it and its TTL "
                    + "index");
        }
        for (Document index : db.getCollection(collection).listIndexes()) {
            Object key = index.get("key");
            if (key instanceof Document k && k.containsKey(LockDocument.EXPIRES_AT)
                    && index.get("expireAfterSeconds") != null) {
                return Finding.ok("ttl-index", namespace + " has the TTL safety net (" + index.get("name")
                        + ", expireAfterSeconds " + index.get("expireAfterSeconds") + ")");
            }
        }
        return Finding.warn("ttl-index", namespace + " has no TTL index on " + LockDocument.EXPIRES_AT + ": dead lock "
                        + "documents stay until a later acquire meets them (the safety net is missing, locks stay safe)",
                "open a locker once with a user allowed to createIndex, or create it: db." + collection
                        + ".createIndex({" + LockDocument.EXPIRES_AT + ": 1}, {name: \"" + MongoLocker.TTL_INDEX
                        + "\", expireAfterSeconds: 3600})");
    }

    private static String millis(Duration d) {
        return (d.isNegative() ? "-" : "+") + d.abs().toMillis() + " ms";
    }
}
