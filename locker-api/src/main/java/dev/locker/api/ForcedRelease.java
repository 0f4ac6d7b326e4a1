package dev.locker.api;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * The audit record of a forced release ({@link Locker#forceRelease(KeyColumn, String)}): who forced it, when (by that
 * process's wall clock), why, and whom it took the lock from. Kept with the lock until the next forced release, so
 * the former holder's lost signal ({@link LossReason#FORCE_RELEASED}) and operators can name it.
 */
public final class ForcedRelease {

    private static final byte VERSION = 1;

    private final LockOwner by;
    private final String reason;
    private final Instant at;
    private final LockOwner released;

    /**
     * @param by       the process that forced the release
     * @param reason   why, as the operator said
     * @param at       when, by that process's wall clock
     * @param released the holder it took the lock from, or null when the lock was free
     */
    public ForcedRelease(LockOwner by, String reason, Instant at, LockOwner released) {
        this.by = Objects.requireNonNull(by, "by");
        this.reason = reason == null ? "" : reason;
        this.at = Objects.requireNonNull(at, "at");
        this.released = released;
    }

    /** {@return the process that forced the release} */
    public LockOwner by() {
        return by;
    }

    /** {@return why, as the operator said} */
    public String reason() {
        return reason;
    }

    /** {@return when, by the forcing process's wall clock} */
    public Instant at() {
        return at;
    }

    /** {@return the holder the lock was taken from, when it had one} */
    public Optional<LockOwner> released() {
        return Optional.ofNullable(released);
    }

    /** {@return the stored form} */
    public byte[] toBytes() {
        byte[] b = by.toBytes();
        byte[] r = reason.getBytes(StandardCharsets.UTF_8);
        byte[] h = released == null ? new byte[0] : released.toBytes();
        return ByteBuffer.allocate(1 + 8 + 4 + r.length + 4 + b.length + 4 + h.length).put(VERSION)
                .putLong(at.toEpochMilli()).putInt(r.length).put(r).putInt(b.length).put(b).putInt(h.length).put(h)
                .array();
    }

    /**
     * Inverse of {@link #toBytes()}.
     *
     * @param bytes the stored form
     * @return the record
     * @throws IllegalArgumentException for bytes it did not write
     */
    public static ForcedRelease fromBytes(byte[] bytes) {
        try {
            ByteBuffer buf = ByteBuffer.wrap(bytes);
            if (buf.get() != VERSION) {
                throw new IllegalArgumentException("unknown version " + bytes[0]);
            }
            Instant at = Instant.ofEpochMilli(buf.getLong());
            String reason = new String(take(buf), StandardCharsets.UTF_8);
            LockOwner by = LockOwner.fromBytes(take(buf));
            byte[] h = take(buf);
            return new ForcedRelease(by, reason, at, h.length == 0 ? null : LockOwner.fromBytes(h));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("not a forced-release record (" + bytes.length + " bytes)", e);
        }
    }

    private static byte[] take(ByteBuffer buf) {
        byte[] out = new byte[buf.getInt()];
        buf.get(out);
        return out;
    }

    @Override
    public String toString() {
        return "force-released by " + by.rid() + " (" + by.host() + ", pid " + by.pid() + ") at " + at
                + (reason.isEmpty() ? "" : ": " + reason) + (released == null ? "" : ", from " + released.rid());
    }
}
