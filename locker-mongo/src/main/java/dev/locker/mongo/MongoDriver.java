package dev.locker.mongo;

import com.mongodb.MongoServerException;
import com.mongodb.ReadConcern;
import com.mongodb.WriteConcern;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.FindOneAndUpdateOptions;
import com.mongodb.client.model.IndexOptions;
import com.mongodb.client.model.Indexes;
import com.mongodb.client.model.Projections;
import com.mongodb.client.model.ReturnDocument;
import com.mongodb.client.model.Updates;
import com.mongodb.client.result.UpdateResult;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.spi.Deadlines;
import dev.locker.spi.LockDriver;
import dev.locker.spi.LockRecords;
import dev.locker.spi.Waiting;
import dev.locker.engine.ClaimStatus;
import org.bson.Document;
import org.bson.conversions.Bson;
import org.bson.types.Binary;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Date;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The lock collection as a driver: {@link MongoLocker} says how claims are kept and why that is safe. One atomic
 * {@code findOneAndUpdate} decides the holder and numbers it ({@link MongoGrants}). Its records are
 * {@link MongoRecords}.
 */
final class MongoDriver implements LockDriver<ClaimStatus> {

    private static final Logger log = LoggerFactory.getLogger(MongoLocker.class);
    static final String TTL_INDEX = "locker_expiresAt_ttl";
    /** At most this many finds per {@link #list} call. */
    static final int LIST_ROUNDS = MongoListing.LIST_ROUNDS;

    private final LockerConfig config;
    private final MongoClient client;
    private final boolean ownsClient;
    private final MongoCollection<Document> locks;
    private final String server;
    private final ServerClock serverClock;
    private final MongoListing listing;
    private final MongoRecords records;
    private final Duration ttlGrace;
    private final ClockSkewBound skew;
    private final ScheduledExecutorService clockChecker;
    private final TakeBacks takeBacks;
    private final MongoGrants grants;

    /**
     * Measures the server's clock, creates the TTL index and starts the clock checker; on a failure it closes a client
     * it owns and throws the failure translated.
     */
    MongoDriver(LockerConfig config, MongoOptions options, MongoConnections.Connection connection) {
        this.config = config;
        this.client = connection.client();
        this.ownsClient = connection.owned();
        this.server = connection.server();
        this.ttlGrace = options.ttlGrace();
        this.skew = new ClockSkewBound(options.serverClockSkew());
        this.locks = client.getDatabase(options.database()).getCollection(options.collection())
                .withWriteConcern(connection.writeConcern()).withReadConcern(connection.readConcern());
        // the re-measuring threshold is the clock's own setting, sized by the configured expiry; no claim's expiry
        this.serverClock = new ServerClock(config.timeSource(), client.getDatabase("admin"), options.maxClockSkew(),
                config.expiry());
        this.listing = new MongoListing(locks, serverClock);
        this.records = new MongoRecords(locks);
        this.takeBacks = new TakeBacks(config.rid(), server, serverClock, skew.millis(), this::release);
        this.grants = new MongoGrants(config, server, locks, locks.withReadConcern(ReadConcern.LOCAL),
                serverClock, skew, takeBacks);
        ScheduledExecutorService checker = null;
        try {
            serverClock.measure();
            ensureIndexes();
            // The first round trip paid for the connection (TCP, TLS, authentication): one on the warm connection is
            // sharper, and the sample kept now decides validity and takeovers until the periodic re-measure.
            logSkew(sharperSample());
            if (!options.clockCheckInterval().isZero()) {
                checker = Executors.newSingleThreadScheduledExecutor(r -> {
                    Thread t = new Thread(r, "locker-mongo-clock-" + config.rid());
                    t.setDaemon(true);
                    return t;
                });
                long every = Math.max(1, options.clockCheckInterval().toMillis());
                checker.scheduleWithFixedDelay(this::remeasure, every, every, TimeUnit.MILLISECONDS);
            }
        } catch (RuntimeException e) {
            if (ownsClient) {
                client.close();
            }
            LockingException t = MongoErrors.translate(e, null, "opening the lock collection " + namespace(), server);
            throw t != null ? t : e;
        }
        this.clockChecker = checker;
        log.debug("MongoLocker {} on {} ({}), clock offset {}", config.rid(), server, namespace(), serverClock.sample());
    }

    @Override
    public Optional<LockRecords<ClaimStatus>> records() {
        return Optional.of(records);
    }

    /** Tells the driver how to learn that its locker began to close; called once, by the locker's constructor. */
    void closedWhen(BooleanSupplier closed) {
        takeBacks.closedWhen(closed);
    }

    // ---- the driver's operations ---------------------------------------------------------------------------------

    /** One atomic upsert decides the holder and numbers it: see {@link MongoGrants#write}. */
    @Override
    public ClaimStatus write(KeyColumn lock, LockOwner owner, Duration expiry, Waiting waiting) {
        return grants.write(lock, owner, expiry);
    }

    @Override
    public ClaimStatus renew(KeyColumn lock, ClaimStatus status, Duration expiry) {
        ServerClock.Reading r = serverClock.read();
        Date now = r.serverDateFloor();
        Date expiresAt = r.serverDateCeil(expiry);
        // $max: a renewal's request that lands after a later renewal must not set the expiry back
        return setExpiry(lock, status, expiry, r, "renew", Filters.exists(LockDocument.HOLDER_LEFT, false),
                Updates.combine(
                        Updates.max(LockDocument.HOLDER_EXPIRES_AT, expiresAt),
                        Updates.max(LockDocument.HOLDER_RENEWED_AT, now),
                        Updates.max(LockDocument.EXPIRES_AT, skew.keptUntil(expiresAt))));
    }

    /**
     * Sets our claim's expiry to exactly {@code expiry} from now, lower than it was if need be, and marks it left. A
     * renewal of ours whose request lands later matches a left claim no more, so it cannot lengthen it again. An
     * acquire attempt of unknown outcome is taken back once the left claim is dead, not before.
     */
    @Override
    public ClaimStatus leave(KeyColumn lock, ClaimStatus status, Duration expiry) {
        ServerClock.Reading r = serverClock.read();
        Date now = r.serverDateFloor();
        Date expiresAt = r.serverDateCeil(expiry);
        TakeBacks.Unsettled late = takeBacks.released(status.claimId());
        try {
            return MongoErrors.UNINTERRUPTIBLE.call(() -> setExpiry(lock, status, expiry, r, "leave", null,
                    Updates.combine(
                            Updates.set(LockDocument.HOLDER_EXPIRES_AT, expiresAt),
                            Updates.max(LockDocument.HOLDER_RENEWED_AT, now),
                            Updates.set(LockDocument.HOLDER_LEFT, true),
                            Updates.set(LockDocument.EXPIRES_AT, skew.keptUntil(expiresAt)))));
        } finally {
            if (late != null) {
                takeBacks.takeBackAfter(lock, status.claimId(), late.latestExpiryMillis(), late.expiry(),
                        expiresAt.getTime());
            }
        }
    }

    /**
     * One {@code findOneAndUpdate} of our live claim's expiry, matching {@code also} too when it is not null. The
     * document comes back: the claim id alone does not prove the grant is ours. A late attempt of our own acquire may
     * have written the same id again after our grant was force-released: a new grant, with a new token.
     */
    private ClaimStatus setExpiry(KeyColumn lock, ClaimStatus status, Duration expiry, ServerClock.Reading r,
                                  String action, Bson also, Bson update) {
        Bson ours = Filters.and(Filters.eq(LockDocument.ID, LockDocument.id(lock)),
                Filters.eq(LockDocument.HOLDER_CLAIM, new Binary(status.claimId())),
                Filters.gte(LockDocument.HOLDER_EXPIRES_AT, r.serverDateFloor()));
        Document after = locks.findOneAndUpdate(also == null ? ours : Filters.and(ours, also), update,
                new FindOneAndUpdateOptions().returnDocument(ReturnDocument.AFTER)
                        .projection(Projections.include(LockDocument.SEQ, LockDocument.TOKEN_BASE)));
        if (after == null) {
            Optional<LockOwner> other = readHolderQuietly(lock);
            throw new ExpiredLockException("cannot " + action + ": our claim expired or was taken away"
                    + other.map(o -> "; the lock now belongs to " + o.rid()).orElse(""), lock, other.orElse(null),
                    null);
        }
        if (LockDocument.token(after) != status.fencingToken()) {
            // our grant ended (force-released, or scrubbed once dead) and a late attempt of the same acquire granted
            // the claim again under a later token: that grant is nobody's, our holder must stop. Withdrawn at once
            // (matched on its seq too: it can remove nothing else); a failure leaves it to expire
            try {
                release(lock, status.claimId(), Filters.eq(LockDocument.SEQ, after.get(LockDocument.SEQ)));
            } catch (RuntimeException e) {
                log.warn("Could not withdraw the late re-grant of our claim on {} (it expires on its own): {}", lock,
                        e.toString());
            }
            throw new ExpiredLockException("our grant (token " + status.fencingToken() + ") ended: the claim was "
                    + "written again by a late attempt of the same acquire, as token " + LockDocument.token(after)
                    + " (withdrawn)", lock, null, null);
        }
        return status.renewed(Deadlines.of(r.nanos(), skew.validity(expiry, r.uncertainty())));
    }

    /**
     * One read: our claim is still the document's holder, with the grant count (hence the token) it got, and alive.
     * A claim that expired but nobody took or scrubbed is still in the document: it is not held all the same.
     */
    @Override
    public ClaimStatus verify(KeyColumn lock, ClaimStatus status) {
        Document doc = locks.find(Filters.eq(LockDocument.ID, LockDocument.id(lock)))
                .projection(Projections.include(LockDocument.HOLDER, LockDocument.SEQ, LockDocument.TOKEN_BASE))
                .first();
        Document holder = LockDocument.holderOf(doc);
        if (heldBy(status, doc, holder)) {
            return status;
        }
        LockOwner other = holder == null || LockDocument.isClaim(holder, status.claimId()) ? null : LockDocument.owner(holder);
        throw new ExpiredLockException("our claim is no longer the holder on " + server
                + (other == null ? " (expired, or force-released)" : "; the lock now belongs to " + other.rid()),
                lock, other, null);
    }

    /**
     * Whether {@code doc}, as the server answered it, shows our claim holding the lock: our claim id, our token, and an
     * expiry not before the server's clock. The clock is read after the answer, so a claim that expired while the
     * request travelled counts as expired. It is the rule a renewal applies: a claim it would extend is held.
     */
    private boolean heldBy(ClaimStatus status, Document doc, Document holder) {
        return holder != null && LockDocument.isClaim(holder, status.claimId())
                && LockDocument.token(doc) == status.fencingToken()
                && LockDocument.isLive(holder, serverClock.read().serverDateFloor());
    }

    /** A second measurement, kept if sharper; should it fail, the first sample stands, as after a failed re-measure. */
    private ServerClock.Sample sharperSample() {
        try {
            return serverClock.measureKeepingTheBetter();
        } catch (RuntimeException e) {
            log.debug("Could not measure the clock offset to {} again (keeping {}): {}", server, serverClock.sample(),
                    e.toString());
            return serverClock.sample();
        }
    }

    /** How many times a blurred clock sample is measured again before a short lease is refused. */
    private static final int REMEASURES = 3;

    /**
     * A holder counts on the expiry less serverClockSkew and less the uncertainty of the server-clock estimate. An
     * expiry no longer than both leaves no validity: the grant would be withdrawn as too late, or a renewal lose it.
     */
    @Override
    public void checkExpiry(Duration expiry) {
        if (expiry.compareTo(skew.serverClockSkew()) <= 0) {
            throw new IllegalArgumentException("expiry " + expiry + " must be more than serverClockSkew "
                    + skew.serverClockSkew() + ": a holder counts on the expiry less the skew");
        }
        Duration uncertainty = serverClock.sample().uncertainty();
        for (int i = 0; i < REMEASURES && expiry.compareTo(skew.serverClockSkew().plus(uncertainty)) <= 0; i++) {
            try {
                // The sample may come from one slow round trip: a sharper one may leave the lease room.
                uncertainty = serverClock.measureKeepingTheBetter().uncertainty();
            } catch (RuntimeException unmeasured) {
                break;
            }
        }
        if (expiry.compareTo(skew.serverClockSkew().plus(uncertainty)) <= 0) {
            throw new IllegalArgumentException("expiry " + expiry + " must be more than serverClockSkew "
                    + skew.serverClockSkew() + " plus the server clock's uncertainty " + uncertainty
                    + ": a holder counts on the expiry less both");
        }
    }

    /**
     * One {@code findOneAndUpdate} removes our claim and returns the document as it was: the claim was ours only if
     * {@link #heldBy} says so of it. Asking first, then releasing, would call a claim that expired untaken ours. Runs
     * with the caller's interrupt flag cleared: a cancelled task still frees its lock.
     */
    @Override
    public boolean releaseOwned(KeyColumn lock, ClaimStatus status) {
        TakeBacks.Unsettled late = takeBacks.released(status.claimId());
        try {
            return MongoErrors.UNINTERRUPTIBLE.call(() -> {
                Document before = locks.findOneAndUpdate(ours(lock, status.claimId()), released(),
                        new FindOneAndUpdateOptions().returnDocument(ReturnDocument.BEFORE).projection(
                                Projections.include(LockDocument.HOLDER, LockDocument.SEQ, LockDocument.TOKEN_BASE)));
                return before != null && heldBy(status, before, LockDocument.holderOf(before));
            });
        } finally {
            if (late != null) {
                takeBacks.takeBack(lock, status.claimId(), late.latestExpiryMillis(), late.expiry());
            }
        }
    }

    /** Releases with the caller's interrupt flag cleared: a cancelled task still frees its lock. */
    @Override
    public void release(KeyColumn lock, ClaimStatus status) {
        TakeBacks.Unsettled late = takeBacks.released(status.claimId());
        try {
            MongoErrors.UNINTERRUPTIBLE.call(() -> release(lock, status.claimId()));
        } finally {
            if (late != null) {
                takeBacks.takeBack(lock, status.claimId(), late.latestExpiryMillis(), late.expiry());
            }
        }
    }

    private boolean release(KeyColumn lock, byte[] claim) {
        return release(lock, claim, null);
    }

    /** Compare-and-delete of claim {@code claim} on {@code lock}, matching {@code also} too when it is not null. */
    private boolean release(KeyColumn lock, byte[] claim, Bson also) {
        Bson ours = ours(lock, claim);
        UpdateResult res = locks.updateOne(also == null ? ours : Filters.and(ours, also), released());
        return res.getMatchedCount() > 0;
    }

    /** The lock's document while claim {@code claim} is its holder, alive or not. */
    private static Bson ours(KeyColumn lock, byte[] claim) {
        return Filters.and(Filters.eq(LockDocument.ID, LockDocument.id(lock)),
                Filters.eq(LockDocument.HOLDER_CLAIM, new Binary(claim)));
    }

    /** A release: the holder unset, the document kept long enough for its token (see {@link ClockSkewBound}). */
    private Bson released() {
        Date now = serverClock.read().serverDateFloor();
        return Updates.combine(Updates.unset(LockDocument.HOLDER),
                Updates.set(LockDocument.EXPIRES_AT, skew.keptUntil(now)));
    }

    /** Claims being taken back now (for tests). */
    int pendingTakeBacks() {
        return takeBacks.pending();
    }

    /**
     * One read: the live holder with its token {@code tokenBase + seq}. A dead holder it meets is scrubbed, as every
     * operation that meets a dead claim scrubs it; not while this process's clock is too far off to judge it dead.
     */
    @Override
    public Optional<LockInfo> readHolder(KeyColumn lock) {
        Document doc = locks.find(Filters.eq(LockDocument.ID, LockDocument.id(lock)))
                .projection(Projections.include(LockDocument.HOLDER, LockDocument.SEQ, LockDocument.TOKEN_BASE))
                .first();
        Document holder = LockDocument.holderOf(doc);
        if (holder == null) {
            return Optional.empty();
        }
        ServerClock.Reading r = serverClock.read();
        if (LockDocument.isLive(holder, r.deadBefore())) {
            return Optional.of(new LockInfo(lock, LockDocument.owner(holder), LockDocument.token(doc),
                    LockDocument.expiry(holder)));
        }
        if (config.scrubExpired() && r.skewTolerable()) {
            scrub(lock, holder, r);
        }
        return Optional.empty();
    }

    /** Removes a dead holder we met, only if it is still that dead claim (a new holder is never touched). */
    private void scrub(KeyColumn lock, Document deadHolder, ServerClock.Reading r) {
        try {
            locks.updateOne(Filters.and(Filters.eq(LockDocument.ID, LockDocument.id(lock)),
                            Filters.eq(LockDocument.HOLDER_CLAIM, deadHolder.get(LockDocument.CLAIM)),
                            Filters.lt(LockDocument.HOLDER_EXPIRES_AT, r.deadBefore())),
                    Updates.combine(Updates.unset(LockDocument.HOLDER),
                            Updates.set(LockDocument.EXPIRES_AT, skew.keptUntil(r.serverDateFloor()))));
        } catch (RuntimeException e) {
            log.debug("Could not scrub the dead claim of {} on {}: {}", LockDocument.owner(deadHolder), lock,
                    e.toString());
        }
    }

    private Optional<LockOwner> readHolderQuietly(KeyColumn lock) {
        try {
            return readHolder(lock).map(LockInfo::holder);
        } catch (RuntimeException e) {
            return Optional.empty();
        }
    }

    /** One page of live held locks: see {@link MongoListing#page}. */
    @Override
    public LockPage list(byte[] keyPrefix, int limit, String cursor) {
        return listing.page(keyPrefix, limit, cursor);
    }

    @Override
    public boolean remove(KeyColumn lock, OptionalLong expectedToken, byte[] record) {
        return expectedToken.isPresent() ? removeWithToken(lock, expectedToken.getAsLong(), record)
                : removeAll(lock);
    }

    /** Unsets the holder whoever it is; the document (and so the token counter) stays. */
    private boolean removeAll(KeyColumn lock) {
        Date now = serverClock.read().serverDateFloor();
        UpdateResult res = locks.updateOne(
                Filters.and(Filters.eq(LockDocument.ID, LockDocument.id(lock)), Filters.exists(LockDocument.HOLDER)),
                Updates.combine(Updates.unset(LockDocument.HOLDER),
                        Updates.set(LockDocument.EXPIRES_AT, skew.keptUntil(now))));
        return res.getMatchedCount() > 0;
    }

    /**
     * The record lives in a document of its own, so it is written first; then one update whose filter is the holder's
     * claim and its token ({@code seq} and {@code tokenBase} as read: a later grant changes {@code seq}) unsets that
     * holder only. When the update matches nothing, the claim ended in between and the record names it all the same.
     */
    private boolean removeWithToken(KeyColumn lock, long token, byte[] record) {
        Document doc = locks.find(Filters.eq(LockDocument.ID, LockDocument.id(lock)))
                .projection(Projections.include(LockDocument.HOLDER, LockDocument.SEQ, LockDocument.TOKEN_BASE))
                .first();
        Document holder = LockDocument.holderOf(doc);
        if (holder == null || LockDocument.token(doc) != token) {
            return false;
        }
        records.putRecord(lock, LockRecords.FORCED, record);
        Date now = serverClock.read().serverDateFloor();
        UpdateResult res = locks.updateOne(Filters.and(Filters.eq(LockDocument.ID, LockDocument.id(lock)),
                        Filters.eq(LockDocument.HOLDER_CLAIM, holder.get(LockDocument.CLAIM)),
                        Filters.eq(LockDocument.SEQ, doc.get(LockDocument.SEQ)),
                        Filters.eq(LockDocument.TOKEN_BASE, doc.get(LockDocument.TOKEN_BASE))),
                Updates.combine(Updates.unset(LockDocument.HOLDER),
                        Updates.set(LockDocument.EXPIRES_AT, skew.keptUntil(now))));
        return res.getMatchedCount() > 0;
    }

    @Override
    public void close() {
        if (clockChecker != null) {
            clockChecker.shutdownNow();
        }
        takeBacks.close();
        if (ownsClient) {
            client.close();
        }
    }

    @Override
    public LockingException translate(RuntimeException e, KeyColumn lock, String action) {
        LockingException t = MongoErrors.translate(e, lock, action, server);
        return t != null ? t : LockDriver.super.translate(e, lock, action);
    }

    // ---- setup and clock -----------------------------------------------------------------------------------------

    /** Creates the TTL safety-net index; idempotent. An existing index with other options is kept (and logged). */
    private void ensureIndexes() {
        try {
            locks.createIndex(Indexes.ascending(LockDocument.EXPIRES_AT),
                    new IndexOptions().name(TTL_INDEX).expireAfter(ttlGrace.toSeconds(), TimeUnit.SECONDS));
        } catch (MongoServerException e) {
            int code = e.getCode();
            if (code == 85 || code == 86) { // IndexOptionsConflict, IndexKeySpecsConflict: someone chose other options
                log.warn("Keeping the existing TTL index on {}.{} (its options differ from ttlGrace={}): {}",
                        namespace(), LockDocument.EXPIRES_AT, ttlGrace, e.getMessage());
            } else if (code == 13) { // Unauthorized: a least-privilege user; the DBA may have created it
                log.warn("Not allowed to create the TTL index on {}: dead lock documents will only be removed by "
                        + "later acquires, not by the TTL safety net: {}", namespace(), e.getMessage());
            } else {
                throw e;
            }
        }
    }

    private void remeasure() {
        try {
            logSkew(serverClock.measureKeepingTheBetter());
        } catch (RuntimeException e) {
            log.debug("Could not re-measure the clock offset to {} (keeping {}): {}", server, serverClock.sample(),
                    e.toString());
        }
    }

    private void logSkew(ServerClock.Sample s) {
        if (s.offset().abs().compareTo(serverClock.maxSkew()) > 0) {
            log.warn("Clock of locker {} is {} away from MongoDB {} (more than maxClockSkew={}): it will not take "
                    + "over expired locks until the clocks agree", config.rid(), s.offset(), server,
                    serverClock.maxSkew());
        }
    }

    /** The estimated offset of the server's clock from this locker's wall clock now (server minus local). */
    Duration clockOffset() {
        return serverClock.read().offset();
    }

    /** Database and collection of the lock documents, {@code db.collection}. */
    String namespace() {
        return locks.getNamespace().getFullName();
    }

    WriteConcern writeConcern() {
        return locks.getWriteConcern();
    }

    ReadConcern readConcern() {
        return locks.getReadConcern();
    }

    /** The server(s) this driver talks to, as named in its messages. */
    String server() {
        return server;
    }
}
