package dev.locker.mongo;

import com.mongodb.MongoServerException;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.Projections;
import com.mongodb.client.model.UpdateOptions;
import com.mongodb.client.model.Updates;
import dev.locker.api.KeyColumn;
import dev.locker.engine.ClaimStatus;
import dev.locker.spi.LockRecords;
import org.bson.Document;
import org.bson.types.Binary;

import java.util.Optional;

/**
 * A lock's records (run once, forced release), kept in a document of their own beside the lock's. A record is
 * replaced only under a token no lower than the one it was written under.
 */
final class MongoRecords implements LockRecords<ClaimStatus> {

    private final MongoCollection<Document> locks;

    MongoRecords(MongoCollection<Document> locks) {
        this.locks = locks;
    }

    /**
     * A lock's records live in a document of their own, {@code _id: {records: <the lock's id>}}: not the lock's
     * document, which the TTL safety net deletes once it is dead. It has no {@code expiresAt}, so the TTL index leaves
     * it alone, and its {@code _id} is no string, so no lock query or listing meets it.
     */
    private static Document recordId(KeyColumn lock) {
        return new Document("records", LockDocument.id(lock));
    }

    @Override
    public Optional<byte[]> readRecord(KeyColumn lock, String name) {
        Document doc = locks.find(Filters.eq(LockDocument.ID, recordId(lock))).projection(Projections.include(name))
                .first();
        Object v = doc == null ? null : doc.get(name);
        return v instanceof Binary ? Optional.of(((Binary) v).getData()) : Optional.empty();
    }

    @Override
    public void putRecord(KeyColumn lock, String name, byte[] value) {
        MongoErrors.UNINTERRUPTIBLE.run(() -> locks.updateOne(Filters.eq(LockDocument.ID, recordId(lock)),
                Updates.set(name, new Binary(value)), new UpdateOptions().upsert(true)));
    }

    /**
     * Checked, then guarded: our claim must hold the lock with our token (read with the configured read concern),
     * and the record is replaced only if it was written under a token no higher than ours, so a writer that paused
     * past its claim cannot replace a later holder's record. A caller's interrupt does not keep the record out.
     */
    @Override
    public boolean writeRecord(KeyColumn lock, String name, byte[] value, ClaimStatus holding) {
        return MongoErrors.UNINTERRUPTIBLE.call(() -> guardedWrite(lock, name, value, holding));
    }

    /** The check and the guarded write of {@link #writeRecord}, on a thread whose interrupt flag is clear. */
    private boolean guardedWrite(KeyColumn lock, String name, byte[] value, ClaimStatus holding) {
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
                    new UpdateOptions().upsert(true));
            return true;
        } catch (MongoServerException e) {
            if (e.getCode() == 11000) { // the record exists under a higher token: a later holder wrote it
                return false;
            }
            throw e;
        }
    }
}
