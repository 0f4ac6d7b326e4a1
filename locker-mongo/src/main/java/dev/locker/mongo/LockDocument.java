package dev.locker.mongo;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockOwner;
import org.bson.BsonString;
import org.bson.Document;
import org.bson.types.Binary;

import java.time.Instant;
import java.util.Arrays;
import java.util.Date;

/**
 * The layout of one lock's document. Field names are fixed constants; the lock's name only ever appears as the
 * {@code _id} value, never as a field name or inside an operator. The {@code _id} is the lock's
 * {@link KeyColumn#legible()} name, so {@code mongosh} shows {@code "vertex:42#name"} or {@code "nightly-report"}:
 * injective, printable ASCII for any bytes, and prefix-preserving, so a listing by key prefix is an {@code _id} range.
 *
 * <pre>
 * {
 *   _id:       KeyColumn.legible(),   // e.g. "vertex:42#name"
 *   seq:       NumberLong,  // grants made in this document's life; $inc'ed by the update that makes a holder
 *   tokenBase: NumberLong,  // server-clock microseconds when the document was created ($setOnInsert)
 *   expiresAt: Date,        // TTL index field: the holder's expiry, or the release time, plus 2 x serverClockSkew
 *   holder: {               // absent when the lock is free
 *     claim: BinData,       // 16 random bytes naming this claim: what renew and release compare
 *     rid, host, pid, thread, why,
 *     acquiredAt, renewedAt, expiresAt: Date   // on the estimated server clock
 *   }
 * }
 * </pre>
 *
 * <p>The holder's fencing token is {@code tokenBase + seq}: strictly increasing while the document lives (seq only
 * grows, a forced release keeps the document), and still increasing when the TTL safety net (or an operator) deleted
 * the document, because a new document's tokenBase is the server-clock time in microseconds, later than the old
 * document's tokenBase plus its grants as long as fewer than one grant per microsecond happened on it, and as long as
 * the request that creates the new document was sent after the old one's last grant: an acquire request that lands
 * more than {@code ttlGrace} (1 h by default) after it was sent could re-create a deleted document with an older base
 * (see MongoLocker's safety argument). After an election the new document's base is on another member's clock: the
 * TTL field's allowance of twice {@code serverClockSkew} keeps the old document until that base is higher too.
 */
final class LockDocument {

    static final String ID = "_id";
    static final String SEQ = "seq";
    static final String TOKEN_BASE = "tokenBase";
    static final String EXPIRES_AT = "expiresAt";
    static final String HOLDER = "holder";

    static final String CLAIM = "claim";
    static final String RID = "rid";
    static final String HOST = "host";
    static final String PID = "pid";
    static final String THREAD = "thread";
    static final String WHY = "why";
    static final String ACQUIRED_AT = "acquiredAt";
    static final String RENEWED_AT = "renewedAt";
    /** Set on a claim left for its hold-at-least: no renewal matches it any more. */
    static final String LEFT = "left";

    static final String HOLDER_CLAIM = HOLDER + "." + CLAIM;
    static final String HOLDER_EXPIRES_AT = HOLDER + "." + EXPIRES_AT;
    static final String HOLDER_RENEWED_AT = HOLDER + "." + RENEWED_AT;
    static final String HOLDER_LEFT = HOLDER + "." + LEFT;

    private LockDocument() {
    }

    static BsonString id(KeyColumn lock) {
        return new BsonString(lock.legible());
    }

    static Document holder(byte[] claim, LockOwner owner, Date now, Date expiresAt) {
        return new Document(CLAIM, new Binary(claim))
                .append(RID, owner.rid())
                .append(HOST, owner.host())
                .append(PID, owner.pid())
                .append(THREAD, owner.thread())
                .append(WHY, owner.why())
                .append(ACQUIRED_AT, now)
                .append(RENEWED_AT, now)
                .append(EXPIRES_AT, expiresAt);
    }

    /** The fencing token of the document's current (or last) holder. */
    static long token(Document doc) {
        return longOf(doc, TOKEN_BASE) + longOf(doc, SEQ);
    }

    /** The holder sub-document, or null. */
    static Document holderOf(Document doc) {
        Object h = doc == null ? null : doc.get(HOLDER);
        return h instanceof Document ? (Document) h : null;
    }

    static boolean isLive(Document holder, Date serverNow) {
        Date exp = holder.getDate(EXPIRES_AT);
        return exp != null && !exp.before(serverNow);
    }

    static boolean isClaim(Document holder, byte[] claim) {
        Object c = holder.get(CLAIM);
        return c instanceof Binary && Arrays.equals(((Binary) c).getData(), claim);
    }

    static LockOwner owner(Document holder) {
        Date since = holder.getDate(ACQUIRED_AT);
        Object pid = holder.get(PID);
        return new LockOwner(String.valueOf(holder.get(RID)), holder.getString(HOST),
                pid instanceof Number ? ((Number) pid).longValue() : 0L, holder.getString(THREAD),
                holder.getString(WHY), since == null ? null : since.toInstant());
    }

    static Instant expiry(Document holder) {
        Date exp = holder.getDate(EXPIRES_AT);
        return exp == null ? null : exp.toInstant();
    }

    private static long longOf(Document doc, String field) {
        Object v = doc.get(field);
        if (!(v instanceof Number)) {
            throw new IllegalStateException("lock document " + doc.get(ID) + " has no numeric " + field
                    + " (written by something else than MongoLocker?)");
        }
        return ((Number) v).longValue();
    }
}
