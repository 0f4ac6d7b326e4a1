package dev.locker.mongo;

import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoCursor;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.Projections;
import com.mongodb.client.model.Sorts;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockPage;
import dev.locker.engine.ListCursor;
import org.bson.BsonType;
import org.bson.Document;
import org.bson.conversions.Bson;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The listing of held locks: bounded pages of the lock collection in {@code _id} order, read on the server-clock
 * estimate. It reads only, and never scrubs what it meets.
 */
final class MongoListing {

    private static final Logger log = LoggerFactory.getLogger(MongoLocker.class);
    private static final String LIST_CURSOR_TAG = "mongo1";
    /** At most this many finds per {@link #page} call. */
    static final int LIST_ROUNDS = 8;

    private final MongoCollection<Document> locks;
    private final ServerClock serverClock;

    MongoListing(MongoCollection<Document> locks, ServerClock serverClock) {
        this.locks = locks;
        this.serverClock = serverClock;
    }

    /**
     * One {@code find} per round on the {@code _id} index, in {@code _id} order after the cursor, that returns only
     * documents whose holder is alive on the server-clock estimate (the liveness {@link MongoDriver#readHolder} uses) and whose
     * {@code _id} starts with the prefix's legible form (a range: legible names keep prefixes, and every character of
     * one is below {@code 0x7f}), at most {@code limit} of them, projected to what a {@link LockInfo} needs; nothing
     * is scrubbed. A round that examined {@code limit} documents without filling the page goes on from the last one,
     * at most {@value #LIST_ROUNDS} rounds per call (then a page may be short, with a cursor). The cursor is the last
     * {@code _id} examined.
     */
    LockPage page(byte[] keyPrefix, int limit, String cursor) {
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
                    id, locks.getNamespace().getFullName(), notOurs.toString());
            return null;
        }
    }
}
