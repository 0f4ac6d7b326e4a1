package dev.locker.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.MongoNamespace;
import com.mongodb.MongoServerException;
import com.mongodb.ReadConcern;
import com.mongodb.WriteConcern;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoCursor;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.FindOneAndUpdateOptions;
import com.mongodb.client.model.IndexOptions;
import com.mongodb.client.model.Indexes;
import com.mongodb.client.model.Projections;
import com.mongodb.client.model.ReturnDocument;
import com.mongodb.client.model.Sorts;
import com.mongodb.client.model.Updates;
import com.mongodb.client.result.UpdateResult;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.local.AbstractLocker;
import dev.locker.local.ClaimStatus;
import dev.locker.local.ListCursor;
import dev.locker.local.LockerBuilder;
import org.bson.BsonString;
import org.bson.BsonType;
import org.bson.Document;
import org.bson.conversions.Bson;
import org.bson.types.Binary;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The atomic lock protocol on MongoDB: one document per lock ({@link LockDocument}), and one single-document
 * {@code findOneAndUpdate} with upsert that decides, writes and numbers the holder.
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
public final class MongoLocker extends AbstractLocker<ClaimStatus> {

    private static final Logger log = LoggerFactory.getLogger(MongoLocker.class);
    private static final SecureRandom RANDOM = new SecureRandom();
    static final String TTL_INDEX = "locker_expiresAt_ttl";
    private static final String LIST_CURSOR_TAG = "mongo1";
    /** At most this many finds per {@link #list} call. */
    static final int LIST_ROUNDS = 8;

    private final MongoClient client;
    private final boolean ownsClient;
    private final MongoCollection<Document> locks;
    private final MongoCollection<Document> locksLocal;
    private final String server;
    private final ServerClock serverClock;
    private final Duration ttlGrace;
    /** How far the clocks of the members that may judge a claim can differ: taken off every holder's validity. */
    private final Duration serverClockSkew;
    /**
     * What the TTL field carries beyond a claim's expiry or a release: twice {@link #serverClockSkew}, in milliseconds.
     * A document then outlives its last token long enough that a member behind by the bound issues a higher base.
     */
    private final long keepTokenMillis;
    private final ScheduledExecutorService clockChecker;
    /** Guards {@link #takeBacks} and {@link #takeBacksStopped}. */
    private final Object takeBackGuard = new Object();
    /** The thread that takes back claims of acquires whose outcome is unknown; made when first needed. */
    private ScheduledExecutorService takeBacks;
    private boolean takeBacksStopped;
    /** The claims being taken back now. */
    private final Set<TakeBack> pendingTakeBacks = ConcurrentHashMap.newKeySet();
    /**
     * Claims granted after an attempt whose outcome is unknown, by id, with the latest expiry an attempt sent: that
     * attempt's request may land after the release and write the claim again, so the release starts a take-back.
     */
    private final Map<ByteBuffer, Long> unsettled = new ConcurrentHashMap<>();

    private MongoLocker(Builder b, MongoClient client, boolean ownsClient, String server, WriteConcern writeConcern,
                        ReadConcern readConcern) {
        super(b);
        this.client = client;
        this.ownsClient = ownsClient;
        this.server = server;
        this.ttlGrace = b.ttlGrace;
        this.serverClockSkew = b.serverClockSkew;
        this.keepTokenMillis = ceilMillis(b.serverClockSkew.multipliedBy(2));
        this.locks = client.getDatabase(b.database).getCollection(b.collection)
                .withWriteConcern(writeConcern).withReadConcern(readConcern);
        this.locksLocal = locks.withReadConcern(ReadConcern.LOCAL);
        this.serverClock = new ServerClock(time, client.getDatabase("admin"), b.maxClockSkew, config.expiry());
        ScheduledExecutorService checker = null;
        try {
            ServerClock.Sample s = serverClock.measure();
            logSkew(s);
            ensureIndexes();
            if (!b.clockCheckInterval.isZero()) {
                checker = Executors.newSingleThreadScheduledExecutor(r -> {
                    Thread t = new Thread(r, "locker-mongo-clock-" + config.rid());
                    t.setDaemon(true);
                    return t;
                });
                long every = Math.max(1, b.clockCheckInterval.toMillis());
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

    public static Builder builder() {
        return new Builder();
    }

    // ---- the hooks ---------------------------------------------------------------------------------------------

    /**
     * Up to {@code config.retries()} attempts, repeated only after a failure that a new attempt can overcome at once
     * (a cut connection, a stepped-down primary), never after a server selection timeout (the server is gone: fail
     * fast). Every attempt carries the same claim id, so an attempt whose write was applied although its reply was
     * lost is recognised by the next one as our own claim instead of as contention. When the call fails after any
     * attempt whose outcome is unknown (its request may still reach the server), the claim is taken back in the
     * background ({@link #takeBack}); the caller does not wait for that. When it succeeds after such an attempt, that
     * attempt's request may still land after the claim was released (and write the claim again): the take-back then
     * starts at the release.
     */
    @Override
    protected ClaimStatus writeSingleLock(KeyColumn lock, LockOwner owner) {
        Claim claim = new Claim();
        ServerClock.Reading first = serverClock.read();
        for (int attempt = 1; ; attempt++) {
            try {
                ClaimStatus granted = acquire(lock, owner, claim, true, first);
                if (claim.mayExist) { // an earlier attempt may still land, after we released: take it back then
                    settleOnRelease(claim);
                }
                return granted;
            } catch (RuntimeException e) {
                boolean giveUp = e instanceof LockingException || attempt >= config.retries()
                        || !MongoErrors.isQuicklyRetryable(e);
                if (!(e instanceof LockingException) && MongoErrors.mayHaveBeenApplied(e)) {
                    claim.mayExist = true;
                }
                if (giveUp) {
                    if (claim.mayExist) { // nobody will use this claim: make sure it does not block the lock
                        takeBack(lock, claim.id, claim.latestExpiryMillis);
                    }
                    throw e;
                }
                log.debug("Attempt {} to claim {} on {} failed, retrying: {}", attempt, lock, server, e.toString());
            }
        }
    }

    /**
     * The claim of one {@link #writeSingleLock} call, shared by its attempts: a random id (this claim's alone, so a
     * take-back that matches it can remove nothing anybody uses), the latest expiry an attempt sent (no request of
     * this call can write a later one, however late it arrives), and whether a request may have written it.
     */
    private static final class Claim {
        final byte[] id = new byte[16];
        long latestExpiryMillis = Long.MIN_VALUE;
        /** The largest uncertainty of the readings any attempt wrote its expiry from: the grant's deadline allows it. */
        Duration uncertainty = Duration.ZERO;
        boolean mayExist;

        Claim() {
            RANDOM.nextBytes(id);
        }
    }

    /**
     * One attempt: the single atomic upsert. {@code first} is the time reading of the first attempt: the local expiry
     * counts from it, because the claim on the server may have been written by that attempt.
     */
    private ClaimStatus acquire(KeyColumn lock, LockOwner owner, Claim claim, boolean mayRetry,
                                ServerClock.Reading first) {
        ServerClock.Reading r = serverClock.read();
        Date now = r.serverDateFloor();
        Date expiresAt = r.serverDateCeil(config.expiry());
        BsonString id = LockDocument.id(lock);
        Bson free = Filters.exists(LockDocument.HOLDER, false);
        Bson filter = r.skewTolerable()
                ? Filters.and(Filters.eq(LockDocument.ID, id),
                        Filters.or(free, Filters.lt(LockDocument.HOLDER_EXPIRES_AT, r.deadBefore())))
                : Filters.and(Filters.eq(LockDocument.ID, id), free);
        Bson update = Updates.combine(
                Updates.set(LockDocument.HOLDER, LockDocument.holder(claim.id, owner, now, expiresAt)),
                Updates.set(LockDocument.EXPIRES_AT, keptUntil(expiresAt)),
                Updates.inc(LockDocument.SEQ, 1L),
                Updates.setOnInsert(LockDocument.TOKEN_BASE, r.serverMicros()));
        FindOneAndUpdateOptions opts = new FindOneAndUpdateOptions().upsert(true)
                .returnDocument(ReturnDocument.AFTER)
                .projection(Projections.include(LockDocument.SEQ, LockDocument.TOKEN_BASE));
        claim.latestExpiryMillis = Math.max(claim.latestExpiryMillis, expiresAt.getTime());
        if (r.uncertainty().compareTo(claim.uncertainty) > 0) {
            claim.uncertainty = r.uncertainty();
        }
        Document after;
        try {
            after = locks.findOneAndUpdate(filter, update, opts);
        } catch (RuntimeException e) {
            if (MongoErrors.isDuplicateKey(e)) {
                return contended(lock, owner, claim, mayRetry, r, first, e);
            }
            throw e;
        }
        if (after == null) { // cannot happen with upsert and returnDocument AFTER; never report a grant we cannot prove
            claim.mayExist = true;
            throw new TemporaryLockingException("the server returned no document for an upsert on " + namespace()
                    + " at " + server, lock);
        }
        return granted(claim, first, LockDocument.token(after));
    }

    /**
     * The holder's deadline counts from the first attempt's reading, less the largest uncertainty of the server-clock
     * readings its attempts wrote expiries from (a later reading may be less certain than the first: aged, or unmeasured
     * after a suspend), and of the first.
     */
    private ClaimStatus granted(Claim claim, ServerClock.Reading first, long token) {
        Duration uncertainty = first.uncertainty().compareTo(claim.uncertainty) >= 0 ? first.uncertainty()
                : claim.uncertainty;
        return ClaimStatus.granted(claim.id, token, deadline(first.nanos(), validity(uncertainty)));
    }

    /**
     * What a holder counts on: the expiry, less the uncertainty of the reading its expiry was written from, less
     * {@code serverClockSkew}, since a member ahead by that much judges the claim dead that much sooner.
     */
    private Duration validity(Duration uncertainty) {
        return config.expiry().minus(uncertainty).minus(serverClockSkew);
    }

    /**
     * The TTL field's value for a document whose holder expires (or that was released) at {@code at}: later by twice
     * {@code serverClockSkew}. A member ahead by the bound may delete it; one behind by it may create the next.
     */
    private Date keptUntil(Date at) {
        return keepTokenMillis == 0 ? at : new Date(at.getTime() + keepTokenMillis);
    }

    private static long ceilMillis(Duration d) {
        long millis = d.toMillis();
        return d.minusMillis(millis).isZero() ? millis : millis + 1;
    }

    /** The upsert met a live holder (or lost the race to create the document): read who holds it. */
    private ClaimStatus contended(KeyColumn lock, LockOwner owner, Claim claim, boolean mayRetry,
                                  ServerClock.Reading r, ServerClock.Reading first, RuntimeException duplicateKey) {
        // local read concern: the winner's write may not be majority-committed yet, and we only want a name
        Document doc = locksLocal.find(Filters.eq(LockDocument.ID, LockDocument.id(lock)))
                .projection(Projections.include(LockDocument.HOLDER, LockDocument.SEQ, LockDocument.TOKEN_BASE))
                .first();
        Document holder = LockDocument.holderOf(doc);
        ServerClock.Reading now = serverClock.read();
        boolean live = holder != null && LockDocument.isLive(holder, now.deadBefore());
        if (live && LockDocument.isClaim(holder, claim.id)) { // an earlier attempt of ours was applied, its reply lost
            // that write may not be majority-committed (a failover could roll it back): confirm it with the
            // configured read concern before believing we hold the lock; this costs a round trip on this path only
            claim.mayExist = true;
            Document confirmed = locks.find(Filters.eq(LockDocument.ID, LockDocument.id(lock)))
                    .projection(Projections.include(LockDocument.HOLDER, LockDocument.SEQ, LockDocument.TOKEN_BASE))
                    .first();
            Document mine = LockDocument.holderOf(confirmed);
            if (mine != null && LockDocument.isClaim(mine, claim.id) && LockDocument.isLive(mine, now.deadBefore())) {
                return granted(claim, first, LockDocument.token(confirmed));
            }
            throw new TemporaryLockingException("an earlier attempt's claim (reply lost) is not confirmed by the "
                    + "read concern yet; it is being taken back, retry", lock, null, duplicateKey);
        }
        if (live) {
            throw new TemporaryLockingException("lock is held by another process (since "
                    + LockDocument.owner(holder).since() + ", until " + LockDocument.expiry(holder)
                    + " on the server's clock)", lock, LockDocument.owner(holder),
                    Duration.between(now.deadBefore().toInstant(), LockDocument.expiry(holder)), null);
        }
        if (holder != null && !r.skewTolerable()) {
            throw new TemporaryLockingException("refusing to take over the expired claim of "
                    + LockDocument.owner(holder) + ": this process's clock is " + r.offset()
                    + " away from the server " + server + ", more than maxClockSkew=" + serverClock.maxSkew()
                    + " (fix the clock, or let another process take it over)", lock, LockDocument.owner(holder),
                    duplicateKey);
        }
        if (mayRetry) { // the holder left between our update and our read: try once more
            return acquire(lock, owner, claim, false, first);
        }
        throw new TemporaryLockingException("lock changed hands while we tried to take it; retry", lock,
                holder == null ? null : LockDocument.owner(holder), duplicateKey);
    }

    @Override
    protected ClaimStatus renewSingleLock(KeyColumn lock, ClaimStatus status) {
        ServerClock.Reading r = serverClock.read();
        Date now = r.serverDateFloor();
        Date expiresAt = r.serverDateCeil(config.expiry());
        // the document comes back: the claim id alone does not prove the grant is ours, a late attempt of our own
        // acquire may have written the same id again after our grant was force-released (a new grant, a new token)
        Document after = locks.findOneAndUpdate(
                Filters.and(Filters.eq(LockDocument.ID, LockDocument.id(lock)),
                        Filters.eq(LockDocument.HOLDER_CLAIM, new Binary(status.claimId())),
                        Filters.gte(LockDocument.HOLDER_EXPIRES_AT, now)),
                Updates.combine(
                        Updates.set(LockDocument.HOLDER_EXPIRES_AT, expiresAt),
                        Updates.set(LockDocument.HOLDER_RENEWED_AT, now),
                        Updates.set(LockDocument.EXPIRES_AT, keptUntil(expiresAt))),
                new FindOneAndUpdateOptions().returnDocument(ReturnDocument.AFTER)
                        .projection(Projections.include(LockDocument.SEQ, LockDocument.TOKEN_BASE)));
        if (after == null) {
            Optional<LockOwner> other = readHolderQuietly(lock);
            throw new ExpiredLockException("cannot renew: our claim expired or was taken away"
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
        return status.renewed(deadline(r.nanos(), validity(r.uncertainty())));
    }

    /** One read: our claim is still the document's holder, with the grant count (hence the token) it got. */
    @Override
    protected ClaimStatus verifySingleLock(KeyColumn lock, ClaimStatus status) {
        Document doc = locks.find(Filters.eq(LockDocument.ID, LockDocument.id(lock)))
                .projection(Projections.include(LockDocument.HOLDER, LockDocument.SEQ, LockDocument.TOKEN_BASE))
                .first();
        Document holder = LockDocument.holderOf(doc);
        if (holder != null && LockDocument.isClaim(holder, status.claimId())
                && LockDocument.token(doc) == status.fencingToken()) {
            return status;
        }
        LockOwner other = holder == null || LockDocument.isClaim(holder, status.claimId()) ? null : LockDocument.owner(holder);
        throw new ExpiredLockException("our claim is no longer the holder on " + server
                + (other == null ? " (expired and scrubbed, or force-released)" : "; the lock now belongs to " + other.rid()),
                lock, other, null);
    }

    // ---- records (run once) ---------------------------------------------------------------------------------------

    /**
     * A lock's records live in a document of their own, {@code _id: {records: <the lock's id>}}: not the lock's
     * document, which the TTL safety net deletes once it is dead. It has no {@code expiresAt}, so the TTL index leaves
     * it alone, and its {@code _id} is no string, so no lock query or listing meets it.
     */
    private static Document recordId(KeyColumn lock) {
        return new Document("records", LockDocument.id(lock));
    }

    @Override
    protected Optional<byte[]> readRecord(KeyColumn lock, String name) {
        Document doc = locks.find(Filters.eq(LockDocument.ID, recordId(lock))).projection(Projections.include(name))
                .first();
        Object v = doc == null ? null : doc.get(name);
        return v instanceof Binary ? Optional.of(((Binary) v).getData()) : Optional.empty();
    }

    @Override
    protected void putRecord(KeyColumn lock, String name, byte[] value) {
        locks.updateOne(Filters.eq(LockDocument.ID, recordId(lock)), Updates.set(name, new Binary(value)),
                new com.mongodb.client.model.UpdateOptions().upsert(true));
    }

    /**
     * Checked, then guarded: our claim must hold the lock with our token (read with the configured read concern),
     * and the record is replaced only if it was written under a token no higher than ours, so a writer that paused
     * past its claim cannot replace a later holder's record.
     */
    @Override
    protected boolean writeRecord(KeyColumn lock, String name, byte[] value, ClaimStatus holding) {
        Document doc = locks.find(Filters.eq(LockDocument.ID, LockDocument.id(lock)))
                .projection(Projections.include(LockDocument.HOLDER, LockDocument.SEQ, LockDocument.TOKEN_BASE))
                .first();
        Document holder = LockDocument.holderOf(doc);
        if (holder == null || !LockDocument.isClaim(holder, holding.claimId())
                || LockDocument.token(doc) != holding.fencingToken()) {
            return false;
        }
        String tokenField = name + "Token";
        try {
            locks.updateOne(Filters.and(Filters.eq(LockDocument.ID, recordId(lock)),
                            Filters.or(Filters.exists(tokenField, false),
                                    Filters.lte(tokenField, holding.fencingToken()))),
                    Updates.combine(Updates.set(name, new Binary(value)), Updates.set(tokenField, holding.fencingToken())),
                    new com.mongodb.client.model.UpdateOptions().upsert(true));
            return true;
        } catch (MongoServerException e) {
            if (e.getCode() == 11000) { // the record exists under a higher token: a later holder wrote it
                return false;
            }
            throw e;
        }
    }

    @Override
    protected void deleteSingleLock(KeyColumn lock, ClaimStatus status) {
        Long latestExpiry = unsettled.isEmpty() ? null : unsettled.remove(ByteBuffer.wrap(status.claimId()));
        try {
            release(lock, status.claimId());
        } finally {
            if (latestExpiry != null) {
                takeBack(lock, status.claimId(), latestExpiry);
            }
        }
    }

    /**
     * Remembers a granted claim one of whose attempts had an unknown outcome, until its release; forgets those that
     * could no longer be live (a hold lost without a release).
     */
    private void settleOnRelease(Claim claim) {
        long deadBefore = serverClock.read().deadBefore().getTime();
        unsettled.values().removeIf(latest -> latest + mayStillLookLiveMillis() < deadBefore);
        unsettled.put(ByteBuffer.wrap(claim.id), claim.latestExpiryMillis);
    }

    private boolean release(KeyColumn lock, byte[] claim) {
        return release(lock, claim, null);
    }

    /** Compare-and-delete of claim {@code claim} on {@code lock}, matching {@code also} too when it is not null. */
    private boolean release(KeyColumn lock, byte[] claim, Bson also) {
        Date now = serverClock.read().serverDateFloor();
        Bson ours = Filters.and(Filters.eq(LockDocument.ID, LockDocument.id(lock)),
                Filters.eq(LockDocument.HOLDER_CLAIM, new Binary(claim)));
        UpdateResult res = locks.updateOne(also == null ? ours : Filters.and(ours, also),
                Updates.combine(Updates.unset(LockDocument.HOLDER),
                        Updates.set(LockDocument.EXPIRES_AT, keptUntil(now))));
        return res.getMatchedCount() > 0;
    }

    /**
     * Takes back, in the background, the claim of an acquire that failed after a request that may still write it (a
     * timed-out or cut upsert can sit in a stalled network path and reach the server later). MongoDB keeps no tombstone
     * for it, so one compare-and-delete is not enough: it may run before the late upsert lands. Instead the locker's
     * take-back thread tries again, with back-off, for as long as the claim could be live: until the server-clock
     * estimate less its uncertainty is past the latest expiry any attempt sent, plus the drift allowance. A request that
     * lands later writes that expiry, which is already past: a dead claim, which any acquire takes over. Each try
     * matches the claim's id only, which nobody uses, so it can remove nothing else. Close stops it.
     */
    private void takeBack(KeyColumn lock, byte[] claim, long latestExpiryMillis) {
        long latest = latestExpiryMillis != Long.MIN_VALUE ? latestExpiryMillis
                : serverClock.read().serverDateCeil(config.expiry()).getTime();
        TakeBack t = new TakeBack(lock, claim, latest + mayStillLookLiveMillis());
        ScheduledExecutorService ex;
        synchronized (takeBackGuard) {
            if (takeBacksStopped) {
                log.info("Not taking back the claim on {} whose acquire's outcome is unknown: the locker is closed; "
                        + "if its request still reaches {}, it holds the lock until {}", lock, server,
                        Instant.ofEpochMilli(latest));
                return;
            }
            if (takeBacks == null) {
                takeBacks = Executors.newSingleThreadScheduledExecutor(r -> {
                    Thread th = new Thread(r, "locker-mongo-takeback-" + config.rid());
                    th.setDaemon(true);
                    return th;
                });
            }
            ex = takeBacks;
            pendingTakeBacks.add(t);
        }
        log.debug("Taking back our claim on {} at {} in the background until it could no longer be live ({} on the "
                + "server's clock)", lock, server, Instant.ofEpochMilli(latest));
        t.schedule(ex, 0);
    }

    /**
     * How long past its expiry on this estimate a claim may still look live: 1 % of the expiry for drift (as in
     * deadline()), and {@code serverClockSkew} for a member whose clock is behind by the bound.
     */
    private long mayStillLookLiveMillis() {
        return Math.max(1, saturatedNanos(config.expiry()) / 100 / 1_000_000) + ceilMillis(serverClockSkew);
    }

    /** Claims being taken back now (for tests). */
    int pendingTakeBacks() {
        return pendingTakeBacks.size();
    }

    /**
     * One claim being taken back: tries, then waits 100 ms, doubling up to a twentieth of the expiry (at least 100 ms,
     * at most 5 s), so a request that lands late blocks the lock that long at most, not for its expiry.
     */
    private final class TakeBack implements Runnable {
        private final KeyColumn lock;
        private final byte[] claim;
        private final long untilServerMillis;
        private final long maxDelayMillis;
        private long delayMillis = 100;
        private int tries;

        TakeBack(KeyColumn lock, byte[] claim, long untilServerMillis) {
            this.lock = lock;
            this.claim = claim;
            this.untilServerMillis = untilServerMillis;
            this.maxDelayMillis = Math.max(100, Math.min(5_000, saturatedNanos(config.expiry()) / 20 / 1_000_000));
        }

        @Override
        public void run() {
            if (serverClock.read().deadBefore().getTime() > untilServerMillis || isClosed()) {
                pendingTakeBacks.remove(this);
                log.debug("Stopped taking back our claim on {} after {} tries: it can no longer be live", lock, tries);
                return;
            }
            tries++;
            try {
                if (release(lock, claim)) {
                    log.info("Took back our claim on {} at {} (try {}): an attempt of an acquire whose outcome was "
                            + "unknown had written it, and nobody uses it", lock, server, tries);
                }
            } catch (RuntimeException e) {
                log.debug("Could not take back our claim on {} at {} (try {}), trying again: {}", lock, server, tries,
                        e.toString());
            }
            long delay = delayMillis;
            delayMillis = Math.min(maxDelayMillis, delayMillis * 2);
            ScheduledExecutorService ex;
            synchronized (takeBackGuard) {
                ex = takeBacksStopped ? null : takeBacks;
            }
            if (ex != null) {
                schedule(ex, delay);
            } else {
                pendingTakeBacks.remove(this);
            }
        }

        void schedule(ScheduledExecutorService ex, long delay) {
            try {
                ex.schedule(this, delay, TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException closing) {
                pendingTakeBacks.remove(this); // the locker closed meanwhile
            }
        }
    }

    @Override
    protected Optional<LockOwner> readHolder(KeyColumn lock) {
        Document doc = locks.find(Filters.eq(LockDocument.ID, LockDocument.id(lock)))
                .projection(Projections.include(LockDocument.HOLDER)).first();
        Document holder = LockDocument.holderOf(doc);
        if (holder == null) {
            return Optional.empty();
        }
        ServerClock.Reading r = serverClock.read();
        if (LockDocument.isLive(holder, r.deadBefore())) {
            return Optional.of(LockDocument.owner(holder));
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
                            Updates.set(LockDocument.EXPIRES_AT, keptUntil(r.serverDateFloor()))));
        } catch (RuntimeException e) {
            log.debug("Could not scrub the dead claim of {} on {}: {}", LockDocument.owner(deadHolder), lock,
                    e.toString());
        }
    }

    private Optional<LockOwner> readHolderQuietly(KeyColumn lock) {
        try {
            return readHolder(lock);
        } catch (RuntimeException e) {
            return Optional.empty();
        }
    }

    /**
     * One {@code find} per round on the {@code _id} index, in {@code _id} order after the cursor, that returns only
     * documents whose holder is alive on the server-clock estimate (the liveness {@link #readHolder} uses) and whose
     * {@code _id} starts with the prefix's legible form (a range: legible names keep prefixes, and every character of
     * one is below {@code 0x7f}), at most {@code limit} of them, projected to what a {@link LockInfo} needs; nothing
     * is scrubbed. A round that examined {@code limit} documents without filling the page goes on from the last one,
     * at most {@value #LIST_ROUNDS} rounds per call (then a page may be short, with a cursor). The cursor is the last
     * {@code _id} examined.
     */
    @Override
    protected LockPage listHeld(byte[] keyPrefix, int limit, String cursor) {
        String from = KeyColumn.legibleKeyPrefix(keyPrefix);
        String after = cursor == null ? null
                : new String(ListCursor.decode(cursor, LIST_CURSOR_TAG, 1)[0], StandardCharsets.US_ASCII);
        List<LockInfo> out = new ArrayList<>();
        for (int round = 0; round < LIST_ROUNDS; round++) {
            Bson range = Filters.and(Filters.type(LockDocument.ID, BsonType.STRING),
                    after == null ? Filters.gte(LockDocument.ID, from) : Filters.gt(LockDocument.ID, after),
                    Filters.lt(LockDocument.ID, from + '\u007f'));
            Bson filter = Filters.and(range, Filters.gte(LockDocument.HOLDER_EXPIRES_AT, serverClock.read().deadBefore()));
            int examined = 0;
            try (MongoCursor<Document> docs = locks.find(filter).sort(Sorts.ascending(LockDocument.ID))
                    .projection(Projections.include(LockDocument.HOLDER, LockDocument.SEQ, LockDocument.TOKEN_BASE))
                    .limit(limit).batchSize(limit).iterator()) {
                while (out.size() < limit && docs.hasNext()) {
                    Document doc = docs.next();
                    examined++;
                    after = doc.getString(LockDocument.ID);
                    LockInfo held = heldLock(after, doc, keyPrefix);
                    if (held != null) {
                        out.add(held);
                    }
                }
            }
            if (out.size() == limit) {
                break; // the documents of this batch not examined yet are read again by the next call
            }
            if (examined < limit) {
                return new LockPage(out, null); // no held lock after the last one examined
            }
        }
        return new LockPage(out, ListCursor.encode(LIST_CURSOR_TAG, after.getBytes(StandardCharsets.US_ASCII)));
    }

    /** The lock document's holder as a {@link LockInfo} when its key starts with {@code keyPrefix}, else null. */
    private LockInfo heldLock(String id, Document doc, byte[] keyPrefix) {
        try {
            KeyColumn lock = KeyColumn.fromLegible(id);
            Document holder = LockDocument.holderOf(doc);
            if (holder == null || !lock.keyStartsWith(keyPrefix)) {
                return null;
            }
            return new LockInfo(lock, LockDocument.owner(holder), LockDocument.token(doc), LockDocument.expiry(holder));
        } catch (IllegalArgumentException | IllegalStateException | ClassCastException notOurs) {
            log.debug("Not listing document {} of {}: not a lock document written by MongoLocker ({})",
                    id, namespace(), notOurs.toString());
            return null;
        }
    }

    /** Unsets the holder whoever it is; the document (and so the token counter) stays. */
    @Override
    protected boolean deleteAllClaims(KeyColumn lock) {
        Date now = serverClock.read().serverDateFloor();
        UpdateResult res = locks.updateOne(
                Filters.and(Filters.eq(LockDocument.ID, LockDocument.id(lock)), Filters.exists(LockDocument.HOLDER)),
                Updates.combine(Updates.unset(LockDocument.HOLDER),
                        Updates.set(LockDocument.EXPIRES_AT, keptUntil(now))));
        return res.getMatchedCount() > 0;
    }

    /** The live holder as {@link #readHolder} sees it (scrubbing nothing), with its token {@code tokenBase + seq}. */
    @Override
    protected Optional<LockInfo> readHolding(KeyColumn lock) {
        Document doc = locks.find(Filters.eq(LockDocument.ID, LockDocument.id(lock)))
                .projection(Projections.include(LockDocument.HOLDER, LockDocument.SEQ, LockDocument.TOKEN_BASE))
                .first();
        Document holder = LockDocument.holderOf(doc);
        if (holder == null || !LockDocument.isLive(holder, serverClock.read().deadBefore())) {
            return Optional.empty();
        }
        return Optional.of(new LockInfo(lock, LockDocument.owner(holder), LockDocument.token(doc),
                LockDocument.expiry(holder)));
    }

    /**
     * The record lives in a document of its own, so it is written first; then one update whose filter is the holder's
     * claim and its token ({@code seq} and {@code tokenBase} as read: a later grant changes {@code seq}) unsets that
     * holder only. When the update matches nothing, the claim ended in between and the record names it all the same.
     */
    @Override
    protected boolean deleteClaimWithToken(KeyColumn lock, long token, byte[] record) {
        Document doc = locks.find(Filters.eq(LockDocument.ID, LockDocument.id(lock)))
                .projection(Projections.include(LockDocument.HOLDER, LockDocument.SEQ, LockDocument.TOKEN_BASE))
                .first();
        Document holder = LockDocument.holderOf(doc);
        if (holder == null || LockDocument.token(doc) != token) {
            return false;
        }
        putRecord(lock, FORCED, record);
        Date now = serverClock.read().serverDateFloor();
        UpdateResult res = locks.updateOne(Filters.and(Filters.eq(LockDocument.ID, LockDocument.id(lock)),
                        Filters.eq(LockDocument.HOLDER_CLAIM, holder.get(LockDocument.CLAIM)),
                        Filters.eq(LockDocument.SEQ, doc.get(LockDocument.SEQ)),
                        Filters.eq(LockDocument.TOKEN_BASE, doc.get(LockDocument.TOKEN_BASE))),
                Updates.combine(Updates.unset(LockDocument.HOLDER),
                        Updates.set(LockDocument.EXPIRES_AT, keptUntil(now))));
        return res.getMatchedCount() > 0;
    }

    @Override
    protected void closeBackend() {
        if (clockChecker != null) {
            clockChecker.shutdownNow();
        }
        synchronized (takeBackGuard) {
            takeBacksStopped = true;
            if (takeBacks != null) {
                takeBacks.shutdownNow(); // drops the scheduled tries; one in flight ends with its I/O
            }
        }
        int pending = pendingTakeBacks.size();
        pendingTakeBacks.clear();
        if (pending > 0) {
            log.info("Locker {} closed while taking back {} claim(s) of acquires whose outcome was unknown: a request "
                    + "of theirs that still reaches {} holds its lock until the claim's expiry", config.rid(),
                    pending, server);
        }
        if (ownsClient) {
            client.close();
        }
    }

    @Override
    protected LockingException translate(RuntimeException e, KeyColumn lock, String action) {
        LockingException t = MongoErrors.translate(e, lock, action, server);
        return t != null ? t : super.translate(e, lock, action);
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
            logSkew(serverClock.measure());
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
    public Duration clockOffset() {
        return serverClock.read().offset();
    }

    /** Database and collection of the lock documents, {@code db.collection}. */
    public String namespace() {
        return locks.getNamespace().getFullName();
    }

    WriteConcern writeConcern() {
        return locks.getWriteConcern();
    }

    ReadConcern readConcern() {
        return locks.getReadConcern();
    }

    /** The server(s) this locker talks to, as named in its messages. */
    public String server() {
        return server;
    }

    @Override
    public String toString() {
        return "MongoLocker[rid=" + config.rid() + ", " + server + "/" + namespace() + "]";
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
            if (client != null) {
                WriteConcern wc = writeConcern != null ? writeConcern : WriteConcern.MAJORITY;
                ReadConcern rc = readConcern != null ? readConcern : ReadConcern.MAJORITY;
                var cluster = client.getClusterDescription().getClusterSettings();
                String hosts = cluster.getSrvHost() != null ? "mongodb+srv://" + cluster.getSrvHost()
                        : String.join(",", cluster.getHosts().stream().map(Object::toString).toList());
                return new MongoLocker(this, client, false, hosts, wc, rc);
            }
            ConnectionString cs = MongoLockerProvider.resolvedConnectionString(connectionString);
            WriteConcern wc = writeConcern != null ? writeConcern
                    : cs.getWriteConcern() != null ? cs.getWriteConcern() : WriteConcern.MAJORITY;
            ReadConcern rc = readConcern != null ? readConcern
                    : cs.getReadConcern() != null ? cs.getReadConcern() : ReadConcern.MAJORITY;
            MongoClientSettings.Builder settings = MongoClientSettings.builder().applyConnectionString(cs)
                    .applicationName(cs.getApplicationName() != null ? cs.getApplicationName() : "locker-mongo");
            if (cs.getServerSelectionTimeout() == null) {
                settings.applyToClusterSettings(c -> c.serverSelectionTimeout(3, TimeUnit.SECONDS));
            }
            if (cs.getConnectTimeout() == null) {
                settings.applyToSocketSettings(s -> s.connectTimeout(3, TimeUnit.SECONDS));
            }
            if (cs.getSocketTimeout() == null) {
                settings.applyToSocketSettings(s -> s.readTimeout(10, TimeUnit.SECONDS));
            }
            String server = cs.isSrvProtocol() ? "mongodb+srv://" + cs.getHosts().get(0) : String.join(",", cs.getHosts());
            MongoClient c = MongoClients.create(settings.build());
            return new MongoLocker(this, c, true, server, wc, rc);
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
