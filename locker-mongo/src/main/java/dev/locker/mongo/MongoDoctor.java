package dev.locker.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.MongoException;
import com.mongodb.ServerAddress;
import com.mongodb.ReadConcern;
import com.mongodb.ReadConcernLevel;
import com.mongodb.WriteConcern;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoDatabase;
import com.mongodb.connection.ClusterConnectionMode;
import com.mongodb.connection.ClusterSettings;
import dev.locker.spi.DeploymentCheck;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import org.bson.Document;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The {@code mongodb://} deployment checks ({@code locker doctor}), judged with the URI's own options and read-only
 * (it opens a client of its own, never a locker, so it creates no index):
 * <ul>
 *   <li>{@code server}: version, replica set or standalone;</li>
 *   <li>{@code write-concern}: below a majority of the set's voting members a failover can roll back a grant, and
 *       unjournaled (w=1 without j=true on a standalone, a numeric w without j=true, writeConcernMajorityJournalDefault
 *       false) a crash loses it (FAIL); a numeric w against the set's size from {@code replSetGetConfig}, else from
 *       {@code hello}, which lists neither votes nor hidden members (then WARN: could not check);</li>
 *   <li>{@code read-concern}: below majority, holder reads and verifications may see a grant a failover rolls back;</li>
 *   <li>{@code clock}: this host's offset to the server's clock and its uncertainty, measured like
 *       {@link MongoLocker} does ({@code ServerClock}), against {@code lockerMaxClockSkewMS};</li>
 *   <li>{@code server-clocks}: the wall clock of every member {@code hello} lists (hosts and passives), each read
 *       on a connection of its own, against {@code lockerServerClockSkewMS}: an election hands the clock that judges
 *       claims to another member (FAIL beyond the bound, WARN near it or for a member it could not read);</li>
 *   <li>{@code ttl-index}: the safety net on {@code expiresAt} of the lock collection.</li>
 * </ul>
 * A check whose input this user may not read says so (WARN "could not check"), never OK.
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
        // a malformed URI or option fails here, before any I/O, as the locker's own parse refuses it
        MongoLockerProvider.Prepared prepared = MongoLockerProvider.prepared(uri, LockerConfig.defaults());
        prepared.builder().validated(prepared.config());
        MongoLockerProvider.Parsed p = MongoLockerProvider.parse(uri);
        Duration serverClockSkew = MongoLockerProvider.serverClockSkew(p);
        ConnectionString cs = MongoLockerProvider.resolvedConnectionString(p.driverUri());
        String database = p.options().getOrDefault(MongoLockerProvider.DATABASE,
                cs.getDatabase() != null ? cs.getDatabase() : "locker");
        String collection = p.options().getOrDefault(MongoLockerProvider.COLLECTION, "locks");
        Duration maxSkew = MongoLockerProvider.maxClockSkew(p);
        if (maxSkew == null) {
            maxSkew = DEFAULT_MAX_SKEW;
        }
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
            ServerClock clock = new ServerClock(TimeSource.system(), admin, maxSkew, Duration.ofSeconds(30));
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
            Topology topology = replicaSet ? Topology.of(hello, replicaSetConfig(admin)) : Topology.STANDALONE;
            out.add(writeConcern(cs.getWriteConcern() != null ? cs.getWriteConcern() : WriteConcern.MAJORITY, topology));
            out.add(readConcern(cs.getReadConcern() != null ? cs.getReadConcern() : ReadConcern.MAJORITY, replicaSet));
            out.add(clock(sample, maxSkew));
            List<String> members = members(hello);
            if (replicaSet) {
                progress.accept("reading the clocks of " + members.size() + " member(s)");
            }
            out.add(replicaSet ? serverClocks(members, settings.build(), serverClockSkew)
                    : Finding.ok("server-clocks", "a standalone server: one clock judges every claim"));
            progress.accept("reading the indexes of " + database + "." + collection);
            try {
                out.add(ttlIndex(client.getDatabase(database), database + "." + collection, collection));
            } catch (MongoException e) {
                LockingException t = MongoErrors.translate(e, null, "reading the indexes", server);
                if (t instanceof TemporaryLockingException) {
                    throw t;
                }
                // refused (listCollections, listIndexes): the check could not run, which is not "no index"
                out.add(Finding.warn("ttl-index", "could not check the TTL index of " + database + "." + collection
                        + ": " + e.getMessage(), "run the doctor as a user allowed listCollections and listIndexes on "
                        + database + ", or check by hand: db." + collection + ".getIndexes()"));
            }
        }
        return out;
    }

    /**
     * The members an election may hand the primary to, as {@code hello} lists them: {@code hosts} and
     * {@code passives} (priority 0 members, read too: a reconfiguration may make them electable). Arbiters hold no
     * data and hidden members are not listed.
     */
    static List<String> members(Document hello) {
        List<String> out = new ArrayList<>();
        for (String field : List.of("hosts", "passives")) {
            if (hello.get(field) instanceof List<?> list) {
                for (Object o : list) {
                    out.add(String.valueOf(o));
                }
            }
        }
        return out;
    }

    /**
     * Reads the wall clock of each member on a connection of its own, with the URI's credentials and TLS settings
     * ({@code base}), and judges how far apart they are against {@code skew}. Each reading is this host's clock at
     * the middle of its round trip against the member's {@code localTime}, so half the round trip bounds its error.
     * Two readings' difference is known within the sum of their errors: FAIL only beyond the bound by more than
     * that, WARN when it may be over half of it.
     */
    static Finding serverClocks(List<String> members, MongoClientSettings base, Duration skew) {
        Map<String, ServerClock.Sample> read = new LinkedHashMap<>();
        List<String> unread = new ArrayList<>();
        for (String member : members) {
            try {
                read.put(member, memberClock(member, base));
            } catch (MongoException | IllegalArgumentException | IllegalStateException e) {
                unread.add(member);
            }
        }
        long low = Long.MAX_VALUE;
        long high = Long.MIN_VALUE;
        List<Long> errors = new ArrayList<>();
        for (ServerClock.Sample s : read.values()) {
            low = Math.min(low, s.offset().toMillis());
            high = Math.max(high, s.offset().toMillis());
            errors.add(s.uncertainty().toMillis());
        }
        errors.sort(Comparator.reverseOrder());
        long spreadMs = read.isEmpty() ? 0 : high - low;
        long errorMs = errors.size() < 2 ? 0 : errors.get(0) + errors.get(1);
        String seen = read.size() + " member clock(s) read" + (read.size() > 1 ? ", " + spreadMs + " ms apart (± "
                + errorMs + " ms)" : "") + (unread.isEmpty() ? "" : "; not read: " + unread)
                + "; lockerServerClockSkewMS=" + skew.toMillis();
        String fix = "keep the members' clocks in sync (NTP or chrony), or raise lockerServerClockSkewMS in the URI to "
                + "at least the largest difference you expect (under half the expiry)";
        if (read.size() > 1 && spreadMs - errorMs > skew.toMillis()) {
            return Finding.fail("server-clocks", seen + ": after an election, a new primary ahead ends claims while "
                    + "their holders still count on them, and one behind may issue a lower fencing token", fix);
        }
        if (!unread.isEmpty()) {
            return Finding.warn("server-clocks", seen + ": an election to a member not read may judge claims by a "
                    + "clock further off", "run the doctor where it reaches every member, with credentials allowed "
                    + "hello");
        }
        if (read.size() > 1 && skew.isZero()) {
            return Finding.warn("server-clocks", seen + ": an election hands the clock that judges claims to "
                    + "another member, which may end them early by the clocks' difference", "set "
                    + "lockerServerClockSkewMS in the URI (e.g. 1000 with NTP), under half the expiry");
        }
        if (read.size() > 1 && 2 * (spreadMs + errorMs) > skew.toMillis()) {
            return Finding.warn("server-clocks", seen + ": within the bound, but by less than half of it", fix);
        }
        return Finding.ok("server-clocks", seen + (read.size() > 1 ? ": within half the bound"
                : ": one clock judges every claim"));
    }

    /** One member's clock against this host's: the tightest of three readings on a direct connection. */
    private static ServerClock.Sample memberClock(String member, MongoClientSettings base) {
        MongoClientSettings direct = MongoClientSettings.builder(base)
                .applyToClusterSettings(c -> c.applySettings(ClusterSettings.builder()
                        .hosts(List.of(new ServerAddress(member))).mode(ClusterConnectionMode.SINGLE)
                        .serverSelectionTimeout(base.getClusterSettings().getServerSelectionTimeout(
                                TimeUnit.MILLISECONDS), TimeUnit.MILLISECONDS).build()))
                .build();
        try (MongoClient client = MongoClients.create(direct)) {
            ServerClock clock = new ServerClock(TimeSource.system(), client.getDatabase("admin"), Duration.ZERO,
                    Duration.ofSeconds(30));
            ServerClock.Sample best = clock.measure();
            for (int i = 0; i < 2; i++) {
                ServerClock.Sample again = clock.measure();
                if (again.uncertainty().compareTo(best.uncertainty()) < 0) {
                    best = again;
                }
            }
            return best;
        }
    }

    private static Document hello(MongoDatabase admin) {
        try {
            return admin.runCommand(new Document("hello", 1));
        } catch (MongoException e) {
            return admin.runCommand(new Document("isMaster", 1));
        }
    }

    /** The replica set's configuration, or null when this user may not read it (it needs clusterMonitor). */
    private static Document replicaSetConfig(MongoDatabase admin) {
        try {
            return admin.runCommand(new Document("replSetGetConfig", 1)).get("config", Document.class);
        } catch (MongoException | ClassCastException e) {
            return null;
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

    /**
     * What the doctor could learn of the deployment a write concern is judged against: standalone or replica set,
     * the numeric {@code w} a majority needs (a range when the set's configuration could not be read: {@code hello}
     * lists neither hidden members nor votes), and {@code writeConcernMajorityJournalDefault} (null: not read).
     *
     * @param replicaSet             a replica set (else a standalone server)
     * @param minMajority            the least numeric w that may be a majority (replica set only)
     * @param maxMajority            the numeric w that surely is, as far as the doctor could see (replica set only)
     * @param exact                  whether the members' votes were read ({@code replSetGetConfig}), so the range
     *                               is the truth; else hidden members may add voters
     * @param members                how the members were counted, for messages
     * @param majorityJournalDefault the set's writeConcernMajorityJournalDefault, or null when it could not be read
     */
    record Topology(boolean replicaSet, int minMajority, int maxMajority, boolean exact, String members,
                    Boolean majorityJournalDefault) {

        static final Topology STANDALONE = new Topology(false, 1, 1, true, "standalone", null);

        /**
         * A replica set as {@code hello} (always readable) and {@code replSetGetConfig} (null when refused) describe
         * it. A numeric w counts acknowledgements of any data-bearing member, voting or not, while a failover is
         * decided by a majority of the voters (arbiters among them): a grant survives it only when the w members
         * that acknowledged it hold a majority of the voters even if every non-voting member was among them.
         */
        static Topology of(Document hello, Document config) {
            if (config != null && config.get("members") instanceof List<?> list) {
                int voters = 0;
                int nonVotingData = 0;
                for (Object o : list) {
                    if (o instanceof Document m) {
                        boolean votes = !(m.get("votes") instanceof Number n) || n.intValue() > 0;
                        if (votes) {
                            voters++;
                        } else if (!Boolean.TRUE.equals(m.get("arbiterOnly"))) {
                            nonVotingData++;
                        }
                    }
                }
                int needed = voters / 2 + 1 + nonVotingData;
                Object mjd = config.get("writeConcernMajorityJournalDefault");
                return new Topology(true, needed, needed, true, voters + " voting member(s)"
                        + (nonVotingData == 0 ? "" : " and " + nonVotingData + " non-voting data-bearing member(s)"),
                        mjd == null ? Boolean.TRUE : Boolean.valueOf(Boolean.TRUE.equals(mjd)));
            }
            int hosts = size(hello.get("hosts"));
            int passives = size(hello.get("passives"));
            int arbiters = size(hello.get("arbiters"));
            // passives (priority 0) may vote or not: voting, they enlarge the majority; not voting, they may be
            // among the w acknowledgements without counting for it
            int min = (hosts + passives + arbiters) / 2 + 1;
            int max = (hosts + arbiters) / 2 + 1 + passives;
            return new Topology(true, min, max, false, (hosts + passives + arbiters) + " member(s) listed by hello ("
                    + hosts + " electable, " + passives + " passive, " + arbiters + " arbiter(s); hidden members are "
                    + "not listed)", null);
        }

        private static int size(Object list) {
            return list instanceof List<?> l ? l.size() : 0;
        }
    }

    /**
     * Judges the write concern a locker on this URI uses: FAIL when an acknowledged grant can be lost (by a crash
     * before the journal has it, or by a failover to a member that lacks it), WARN when that could not be checked.
     */
    static Finding writeConcern(WriteConcern wc, Topology t) {
        Object w = wc.getWObject();
        Boolean j = wc.getJournal();
        String what = "write concern w=" + (w == null ? "unset (the server's default)" : w)
                + (j == null ? "" : ", j=" + j);
        if (Boolean.FALSE.equals(j)) {
            return Finding.fail("write-concern", what + ": a grant acknowledged before it reached the journal can be "
                    + "lost in a crash, and granted again", "drop journal=false from the URI");
        }
        if (w instanceof Integer n && n < 1) {
            return Finding.fail("write-concern", what + ": grants are not acknowledged at all, so a lost one is "
                    + "never noticed", "drop w= from the URI (Locker's default is w=majority)");
        }
        boolean majority = "majority".equals(w);
        if (!t.replicaSet()) {
            if (w instanceof Integer n && n > 1) {
                return Finding.fail("write-concern", what + ": a standalone server refuses w greater than 1, so no "
                        + "lock can be taken", "drop w= from the URI (Locker's default is w=majority)");
            }
            if (Boolean.TRUE.equals(j) || majority) {
                return Finding.ok("write-concern", what + ": a grant is in the server's on-disk journal before it "
                        + "is acknowledged");
            }
            return Finding.fail("write-concern", what + " on a standalone server: a grant is acknowledged from "
                    + "memory, before it reaches the journal (up to 100 ms later), so a crash loses acknowledged "
                    + "grants and the fencing-token counters written with them: the lock is granted again while its "
                    + "holder still works, with a token that may repeat",
                    "drop w= from the URI (Locker's default w=majority waits for the journal on a standalone), or "
                            + "add journal=true");
        }
        // a replica set: first, does a failover keep the grant?
        if (!majority) {
            String rollback = ": a failover can elect a member without the grant and roll it back, after its holder "
                    + "was told it holds the lock, and grant the lock to another process";
            String fix = "drop w= from the URI (Locker's default is w=majority) or set w=majority";
            if (w == null) {
                return Finding.fail("write-concern", what + " on a replica set: may be w=1" + rollback,
                        "set w=majority in the URI");
            }
            if (!(w instanceof Integer n)) {
                return Finding.warn("write-concern", what + " on a replica set: could not check whether the tag set "
                        + "'" + w + "' always takes a majority of the voting members; if not" + rollback, fix);
            }
            if (n < t.minMajority()) {
                return Finding.fail("write-concern", what + " on a replica set of " + t.members() + ", whose "
                        + "majority needs w=" + t.minMajority() + (t.exact() ? "" : " at least") + rollback, fix);
            }
            if (!t.exact() || n < t.maxMajority()) {
                return Finding.warn("write-concern", what + " on a replica set of " + t.members() + ": could not "
                        + "check that w=" + n + " is a majority (replSetGetConfig, which shows votes and hidden "
                        + "members, was refused); if it is not" + rollback, fix);
            }
        }
        // then, does a crash of the members that acknowledged it keep it?
        if (Boolean.TRUE.equals(j)) {
            return Finding.ok("write-concern", what + ": a grant is journaled on a majority, so it survives a "
                    + "failover and a crash");
        }
        if (!majority) {
            return Finding.fail("write-concern", what + ": the members acknowledge a grant from memory, before it "
                    + "reaches their journals, so a crash of those members (a power loss) loses acknowledged grants "
                    + "and the fencing-token counters written with them", "add journal=true to the URI, or set "
                    + "w=majority instead (journaled while writeConcernMajorityJournalDefault is true)");
        }
        if (t.majorityJournalDefault() == null) {
            return Finding.warn("write-concern", what + ": a grant survives a failover; whether the majority has it "
                    + "in its journals when it is acknowledged depends on writeConcernMajorityJournalDefault, which "
                    + "could not be checked (replSetGetConfig was refused; it is true unless someone turned it off)",
                    "add journal=true to the URI, which makes it journaled whatever that setting says");
        }
        if (!t.majorityJournalDefault()) {
            return Finding.fail("write-concern", what + " and the set's writeConcernMajorityJournalDefault is false: "
                    + "a majority acknowledges a grant from memory, so a crash of that majority (a power loss) loses "
                    + "acknowledged grants and the fencing-token counters written with them",
                    "add journal=true to the URI (or set writeConcernMajorityJournalDefault: true in the set's "
                            + "configuration)");
        }
        return Finding.ok("write-concern", what + ": a grant is journaled on a majority (writeConcernMajorityJournal"
                + "Default is true), so it survives a failover and a crash");
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
