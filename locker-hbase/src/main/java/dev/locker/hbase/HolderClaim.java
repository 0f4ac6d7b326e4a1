package dev.locker.hbase;

import dev.locker.api.LockOwner;

import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The value of a lock row's holder cell: a format byte, a 16-byte claim id (so that no two claims compare equal),
 * the claim's lifetime in milliseconds (its cell's TTL on the region server: the
 * expiry plus the region servers' clock allowance), and the owner metadata. The value never
 * changes while the claim lives (renewal rewrites the same bytes with a new cell TTL), so compare-and-set on it
 * identifies the claim. An empty value, or one of format 2 ({@link LockTable#freeAt}), means "free".
 */
final class HolderClaim {

    private static final byte FORMAT = 1;
    private static final int HEADER = 1 + 16 + 8;
    /** The first half of every claim id of this process: random, drawn once. */
    private static final long PROCESS_ID;
    /** The second half: a sequence from a random start, so that no two claims of this process share an id. */
    private static final AtomicLong SEQUENCE;

    static {
        SecureRandom random = new SecureRandom();
        PROCESS_ID = random.nextLong();
        SEQUENCE = new AtomicLong(random.nextLong());
    }

    final byte[] value;
    final LockOwner owner;
    final Duration lifetime;

    private HolderClaim(byte[] value, LockOwner owner, Duration lifetime) {
        this.value = value;
        this.owner = owner;
        this.lifetime = lifetime;
    }

    /** A new claim by {@code owner}, first written at {@code since} (the writer's clock; for display only). */
    static HolderClaim create(LockOwner owner, Instant since, Duration lifetime) {
        // a sequence, not a draw per claim: SecureRandom reads the kernel's pool and hashes under a lock each time
        LockOwner o = owner.withSince(since);
        byte[] ob = o.toBytes();
        ByteBuffer buf = ByteBuffer.allocate(HEADER + ob.length);
        buf.put(FORMAT).putLong(PROCESS_ID).putLong(SEQUENCE.getAndIncrement()).putLong(lifetime.toMillis()).put(ob);
        return new HolderClaim(buf.array(), o, lifetime);
    }

    /**
     * The claim {@code value} with the lifetime {@code millis}: the same array when it has that lifetime already, so
     * a renewal of an unchanged expiry rewrites the very bytes it checks.
     */
    static byte[] withLifetime(byte[] value, long millis) {
        ByteBuffer buf = ByteBuffer.wrap(value);
        if (value.length < HEADER || buf.getLong(1 + 16) == millis) {
            return value;
        }
        byte[] out = value.clone();
        ByteBuffer.wrap(out).putLong(1 + 16, millis);
        return out;
    }

    /** Decodes a holder cell's value; null for a free value, empty or naming the counter ({@link LockTable#freeAt}). */
    static HolderClaim decode(byte[] value) {
        if (value == null || value.length == 0 || LockTable.isFreeAt(value)) {
            return null;
        }
        if (value.length < HEADER || value[0] != FORMAT) {
            throw new IllegalArgumentException("not a lock holder value (" + value.length + " bytes, format "
                    + (value.length > 0 ? value[0] : -1) + ")");
        }
        ByteBuffer buf = ByteBuffer.wrap(value);
        buf.position(1 + 16);
        long millis = buf.getLong();
        byte[] ob = new byte[buf.remaining()];
        buf.get(ob);
        return new HolderClaim(value, LockOwner.fromBytes(ob), Duration.ofMillis(millis));
    }
}
