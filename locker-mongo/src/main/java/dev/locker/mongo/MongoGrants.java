package dev.locker.mongo;

import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.FindOneAndUpdateOptions;
import com.mongodb.client.model.Projections;
import com.mongodb.client.model.ReturnDocument;
import com.mongodb.client.model.Updates;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockOwner;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.engine.ClaimStatus;
import dev.locker.spi.Deadlines;
import org.bson.BsonString;
import org.bson.Document;
import org.bson.conversions.Bson;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.Date;

/**
 * How a claim is granted: one atomic {@code findOneAndUpdate} upsert decides the holder and numbers it. The attempts
 * of one write share a claim id, so a lost reply is not taken for contention. A claim of unknown outcome is taken back.
 */
final class MongoGrants {

    private static final Logger log = LoggerFactory.getLogger(MongoLocker.class);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final LockerConfig config;
    private final String server;
    private final MongoCollection<Document> locks;
    private final MongoCollection<Document> locksLocal;
    private final ServerClock serverClock;
    private final ClockSkewBound skew;
    private final TakeBacks takeBacks;

    /**
     * @param config      the locker's configuration (its retries)
     * @param server      the server(s), as named in messages
     * @param locks       the lock collection, with the configured read and write concerns
     * @param locksLocal  the same, read with the local read concern
     * @param serverClock the estimate of the server's clock
     * @param skew        the bound on the members' clock differences
     * @param takeBacks   where claims of unknown outcome are taken back
     */
    MongoGrants(LockerConfig config, String server, MongoCollection<Document> locks,
                MongoCollection<Document> locksLocal, ServerClock serverClock, ClockSkewBound skew,
                TakeBacks takeBacks) {
        this.config = config;
        this.server = server;
        this.locks = locks;
        this.locksLocal = locksLocal;
        this.serverClock = serverClock;
        this.skew = skew;
        this.takeBacks = takeBacks;
    }

    /**
     * Up to {@code config.retries()} attempts, repeated only after a failure that a new attempt can overcome at once
     * (a cut connection, a stepped-down primary), never after a server selection timeout (the server is gone: fail
     * fast). Every attempt carries the same claim id, so an attempt whose write was applied although its reply was
     * lost is recognised by the next one as our own claim instead of as contention. When the call fails after any
     * attempt whose outcome is unknown (its request may still reach the server), the claim is taken back in the
     * background ({@link TakeBacks}); the caller does not wait for that. When it succeeds after such an attempt, that
     * attempt's request may still land after the claim was released (and write the claim again): the take-back then
     * starts at the release.
     */
    ClaimStatus write(KeyColumn lock, LockOwner owner, Duration expiry) {
        Claim claim = new Claim(expiry);
        ServerClock.Reading first = serverClock.read();
        for (int attempt = 1; ; attempt++) {
            try {
                ClaimStatus granted = acquire(lock, owner, claim, true, first);
                if (claim.mayExist) { // an earlier attempt may still land, after we released: take it back then
                    takeBacks.settleOnRelease(claim.id, claim.latestExpiryMillis, claim.expiry);
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
                        takeBacks.takeBack(lock, claim.id, claim.latestExpiryMillis, claim.expiry);
                    }
                    throw e;
                }
                log.debug("Attempt {} to claim {} on {} failed, retrying: {}", attempt, lock, server, e.toString());
            }
        }
    }

    /**
     * The claim of one {@link #write} call, shared by its attempts: a random id (this claim's alone, so a take-back
     * that matches it can remove nothing anybody uses), the expiry the engine gave it, the latest expiry an attempt
     * sent (no request of this call can write a later one, however late it arrives), and whether a request may have
     * written it.
     */
    private static final class Claim {
        final byte[] id = new byte[16];
        final Duration expiry;
        long latestExpiryMillis = Long.MIN_VALUE;
        /** The largest uncertainty of the readings any attempt wrote its expiry from: the grant's deadline allows it. */
        Duration uncertainty = Duration.ZERO;
        boolean mayExist;

        Claim(Duration expiry) {
            this.expiry = expiry;
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
        Date expiresAt = r.serverDateCeil(claim.expiry);
        BsonString id = LockDocument.id(lock);
        Bson free = Filters.exists(LockDocument.HOLDER, false);
        Bson filter = r.skewTolerable()
                ? Filters.and(Filters.eq(LockDocument.ID, id),
                        Filters.or(free, Filters.lt(LockDocument.HOLDER_EXPIRES_AT, r.deadBefore())))
                : Filters.and(Filters.eq(LockDocument.ID, id), free);
        Bson update = Updates.combine(
                Updates.set(LockDocument.HOLDER, LockDocument.holder(claim.id, owner, now, expiresAt)),
                Updates.set(LockDocument.EXPIRES_AT, skew.keptUntil(expiresAt)),
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
        return ClaimStatus.granted(claim.id, token,
                Deadlines.of(first.nanos(), skew.validity(claim.expiry, uncertainty)));
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

    /** Database and collection of the lock documents, {@code db.collection}. */
    private String namespace() {
        return locks.getNamespace().getFullName();
    }
}
