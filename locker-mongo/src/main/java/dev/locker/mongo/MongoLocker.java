package dev.locker.mongo;

import com.mongodb.MongoNamespace;
import com.mongodb.ReadConcern;
import com.mongodb.WriteConcern;
import com.mongodb.client.MongoClient;
import dev.locker.api.LockerConfig;
import dev.locker.engine.ClaimStatus;
import dev.locker.engine.LockerBuilder;
import dev.locker.engine.LockerEngine;

import java.time.Duration;
import java.util.Objects;

/**
 * The atomic lock protocol on MongoDB: one document per lock ({@link LockDocument}), and one single-document
 * {@code findOneAndUpdate} with upsert that decides, writes and numbers the holder. This class is the engine over the
 * lock collection's driver ({@code MongoDriver}), with the builder users call.
 *
 * <p>Acquire: filter {@code {_id: lock, $or: [{holder: {$exists: false}}, {"holder.expiresAt": {$lt: deadBefore}}]}},
 * update {@code $set} the holder, {@code $inc seq}, {@code $setOnInsert tokenBase}. The filter matches only when the
 * lock is free or its holder is dead, and then the update replaces the dead holder (scrubbing it) and hands out the
 * next fencing token in the same atomic step. When a live holder exists the filter does not match, the upsert tries
 * to insert a second document with the same {@code _id}, and the server answers duplicate key (11000): that means
 * "taken", never an error; the holder is then read for the exception (a second round trip only on that path). Two
 * clients racing to create a new lock's document end the same way: one inserts, the other gets 11000.
 *
 * <p>Costs: an uncontended acquire is one round trip and is granted at once (checkLocks does no I/O); release is one
 * round trip; renewal one; a refused acquire two.
 *
 * <p>Time: "now" in every filter is the server's clock as estimated by {@link ServerClock} (measured from the
 * server's {@code hello} reply, carried forward on the monotonic clock); a holder counts as dead only when its expiry
 * is before that estimate minus its uncertainty. Claims are ordered by the per-lock {@code seq} counter, never by a
 * clock. When the offset of this process's wall clock from that estimate exceeds {@code maxClockSkew}, this locker
 * still takes free locks, renews and releases, but refuses to take over an expired holder: deciding that another
 * process's claim is dead is the one decision a wrong clock would make unsafe.
 *
 * <p>Ownership: renew and release match the claim's random 16-byte id as well as the lock, so a former holder can
 * neither extend nor delete its successor's claim.
 *
 * <p><b>Safety argument.</b> What decides the holder: the one atomic update above on the lock's document; its filter
 * admits a free lock or a holder whose expiry is before the server-clock estimate minus its uncertainty, and the same
 * update {@code $inc}s {@code seq}, so the token {@code tokenBase + seq} rises with every grant. What decides expiry: the
 * primary's wall clock, as each client estimates it. What a paused holder can and cannot do: its deadline is one
 * monotonic reading taken before the granting (or renewing) request plus the expiry, less the estimate's uncertainty
 * and a drift allowance, and every step compares it again after its I/O; a late renewal or release filters on the claim
 * id, so once another process was granted the lock it matches nothing (a late renewal with nobody else granted in
 * between only extends a claim that is still the holder's). Assumptions: writes and reads with majority concerns (the
 * defaults; with {@code w=1} a failover can roll back a grant and admit a second holder); the primary's clock does not
 * step while claims live (a forward step expires them early); the clocks of the members that an election may promote
 * stay within {@code serverClockSkew} of each other (below); {@code tokenBase} outgrows earlier tokens after the TTL
 * safety net deleted a document only while the primary's clock does not step back, fewer than one grant per
 * microsecond happened on that document, and no acquire request lands more than {@code ttlGrace} after it was sent
 * (1 h by default): such a request, re-creating the deleted document, would bring the older time of its sending as
 * the new document's {@code tokenBase}. The base must be the creation time for {@code tokenBase + seq} to track time
 * (raising it at every grant instead lets tokens run ahead of it by the grant count); MongoDB offers the time of
 * applying a write only through {@code $$NOW} in pipeline updates, which not every server here runs.
 *
 * <p><b>Across an election.</b> A new primary brings its own clock, which lockers estimate from then on. Its members'
 * clocks may differ by at most {@code serverClockSkew}, a bound the deployment states (default 0, one server). A member
 * ahead by the bound ends every claim that much sooner, so each holder counts on the expiry less the bound. A member
 * behind by it creates a deleted lock document afresh with a lower {@code tokenBase}. So the TTL field outlives each
 * write by twice the bound: one bound for the member that deletes, one for the member that creates. Then a new base
 * is above the old document's creation time, on every clock within the bound. {@link MongoDoctor} measures the members.
 *
 * <p><b>An acquire whose outcome is unknown</b> (its upsert timed out, or the connection broke after sending it) may
 * still write its claim later, when a stalled network path delivers the request; nobody would ever use or release that
 * claim. MongoDB has no tombstone to make such a late request grant nothing, but every request carries its expiry,
 * fixed before it was sent, so however late it lands its claim is dead after that expiry. The locker therefore takes the
 * claim back (compare-and-delete on its random id; when a later attempt of the same acquire was granted, from the
 * moment that claim is released) on a background thread of its own, again and again with back-off
 * (100 ms doubling to a twentieth of the expiry, at most 5 s), until the claim could no longer be live on the server's
 * clock (the estimate less its uncertainty past the latest expiry sent, plus one percent of the expiry for drift); it
 * logs at INFO when a try removed the claim. A late claim thus blocks the lock for one back-off step after it lands,
 * not for the expiry. The cost is one small update per step while the task lasts (about 60 over JanusGraph's default
 * 5 minutes). The caller never waits for it; {@link #close()} stops it.
 */
public final class MongoLocker extends LockerEngine<ClaimStatus> {

    /** The name of the TTL safety-net index on the lock collection. */
    static final String TTL_INDEX = MongoDriver.TTL_INDEX;
    /** At most this many finds per {@link #list} call. */
    static final int LIST_ROUNDS = MongoDriver.LIST_ROUNDS;

    private final MongoDriver driver;

    /** {@code made} receives the driver the engine makes, so that this class can answer for it. */
    private MongoLocker(Builder b, MongoOptions options, MongoConnections.Connection connection, MongoDriver[] made) {
        super(b, config -> made[0] = new MongoDriver(config, options, connection));
        this.driver = made[0];
        driver.closedWhen(this::isClosed);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Claims being taken back now (for tests). */
    int pendingTakeBacks() {
        return driver.pendingTakeBacks();
    }

    /** The estimated offset of the server's clock from this locker's wall clock now (server minus local). */
    public Duration clockOffset() {
        return driver.clockOffset();
    }

    /** Database and collection of the lock documents, {@code db.collection}. */
    public String namespace() {
        return driver.namespace();
    }

    WriteConcern writeConcern() {
        return driver.writeConcern();
    }

    ReadConcern readConcern() {
        return driver.readConcern();
    }

    /** The server(s) this locker talks to, as named in its messages. */
    public String server() {
        return driver.server();
    }

    @Override
    public String toString() {
        return "MongoLocker[rid=" + config.rid() + ", " + server() + "/" + namespace() + "]";
    }

    /**
     * Options of a {@link MongoLocker}, with safe defaults: database {@code locker}, collection {@code locks},
     * write concern and read concern {@code majority} (unless the URI names its own), a server selection and connect
     * timeout of 3 s and a socket timeout of 10 s (unless the URI names its own), maxClockSkew 10 s,
     * clockCheckInterval 60 s, ttlGrace 1 h, serverClockSkew 0.
     */
    public static final class Builder extends LockerBuilder<Builder> {
        private String connectionString;
        private MongoClient client;
        private String database = "locker";
        private String collection = "locks";
        private WriteConcern writeConcern;
        private ReadConcern readConcern;
        private Duration maxClockSkew = Duration.ofSeconds(10);
        private Duration clockCheckInterval = Duration.ofSeconds(60);
        private Duration ttlGrace = Duration.ofHours(1);
        private Duration serverClockSkew = Duration.ZERO;

        private Builder() {
        }

        /** A standard MongoDB connection string ({@code mongodb://} or {@code mongodb+srv://}); the locker owns its client. */
        public Builder connectionString(String uri) {
            this.connectionString = Objects.requireNonNull(uri, "connectionString must not be null");
            this.client = null;
            return this;
        }

        /** An existing client, shared with the application; the locker does not close it. */
        public Builder client(MongoClient c) {
            this.client = Objects.requireNonNull(c, "client must not be null");
            this.connectionString = null;
            return this;
        }

        /** The database of the lock collection; a name MongoDB refuses is an argument error here, before any I/O. */
        public Builder database(String name) {
            try {
                MongoNamespace.checkDatabaseNameValidity(nonEmpty(name, "database"));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("bad MongoDB database name '" + name + "': " + e.getMessage(), e);
            }
            this.database = name;
            return this;
        }

        public Builder collection(String name) {
            this.collection = nonEmpty(name, "collection");
            return this;
        }

        public Builder writeConcern(WriteConcern wc) {
            this.writeConcern = Objects.requireNonNull(wc, "writeConcern must not be null");
            return this;
        }

        public Builder readConcern(ReadConcern rc) {
            this.readConcern = Objects.requireNonNull(rc, "readConcern must not be null");
            return this;
        }

        /** Above this measured clock offset to the server, expired holders are not taken over. */
        public Builder maxClockSkew(Duration d) {
            this.maxClockSkew = nonNegative(d, "maxClockSkew");
            return this;
        }

        /** How often the clock offset is measured again in the background; zero measures only at start. */
        public Builder clockCheckInterval(Duration d) {
            this.clockCheckInterval = nonNegative(d, "clockCheckInterval");
            return this;
        }

        /** How long after its expiry (or release) the TTL index removes a lock document; whole seconds. */
        public Builder ttlGrace(Duration d) {
            this.ttlGrace = nonNegative(d, "ttlGrace");
            return this;
        }

        /**
         * How far apart the clocks of the replica set's members may be. An election hands the primary, and so the
         * clock that lockers estimate, to another member. A member ahead by this much ends every claim this much
         * sooner, so each holder counts on the expiry less this bound. A member behind by it must issue no lower
         * token, so a lock document outlives its last write by twice the bound. Default 0, right for one server.
         * Must be under half the expiry; {@code locker doctor} measures the members' clocks.
         */
        public Builder serverClockSkew(Duration d) {
            this.serverClockSkew = nonNegative(d, "serverClockSkew");
            return this;
        }

        /**
         * Checks the options against the locker configuration {@code cfg}, before any I/O.
         *
         * @throws IllegalArgumentException naming the option and what it must be
         */
        LockerConfig validated(LockerConfig cfg) {
            // compared as skew < expiry - skew: no multiplication, so no overflow for a huge skew
            if (serverClockSkew.compareTo(cfg.expiry().minus(serverClockSkew)) >= 0) {
                throw new IllegalArgumentException("serverClockSkew " + serverClockSkew + " must be less than half "
                        + "the expiry " + cfg.expiry() + ": a holder counts on the expiry less the skew, and "
                        + "keep-alive renews every third of the expiry");
            }
            return cfg;
        }

        /**
         * Connects, measures the clock offset and creates the TTL index.
         *
         * @throws dev.locker.api.TemporaryLockingException when the server is unreachable (naming it)
         * @throws dev.locker.api.PermanentLockingException when authentication fails or the server refuses
         * @throws IllegalArgumentException before any I/O, when an option is out of bounds (serverClockSkew)
         */
        public MongoLocker build() {
            if (client == null && connectionString == null) {
                throw new IllegalArgumentException("set connectionString(...) or client(...)");
            }
            validated(effectiveConfig());
            MongoOptions options = new MongoOptions(database, collection, maxClockSkew, clockCheckInterval, ttlGrace,
                    serverClockSkew);
            MongoConnections.Connection connection = client != null
                    ? MongoConnections.shared(client, writeConcern, readConcern)
                    : MongoConnections.open(connectionString, writeConcern, readConcern);
            return new MongoLocker(this, options, connection, new MongoDriver[1]);
        }

        private static String nonEmpty(String s, String what) {
            Objects.requireNonNull(s, what + " must not be null");
            if (s.isEmpty()) {
                throw new IllegalArgumentException(what + " must not be empty");
            }
            return s;
        }

        private static Duration nonNegative(Duration d, String what) {
            Objects.requireNonNull(d, what + " must not be null");
            if (d.isNegative()) {
                throw new IllegalArgumentException(what + " must not be negative, was " + d);
            }
            return d;
        }
    }
}
