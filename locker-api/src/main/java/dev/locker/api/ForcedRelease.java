package dev.locker.api;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The audit record of a forced release ({@link Locker#forceRelease(KeyColumn, String)}): who forced it, when (by that
 * process's wall clock), why, and whom it took the lock from: the holder and the fencing token of the claim it took.
 * Kept with the lock until the next forced release, so the former holder's lost signal
 * ({@link LossReason#FORCE_RELEASED}) and operators can name it. The token tells that claim from every other claim of
 * the same holder: a later loss of the same locker is not blamed on this release.
 *
 * <p>Stored form: version 1, with the token as an optional trailer (records written before it have none, and a reader
 * that predates it ignores it).
 */
public final class ForcedRelease {

    private static final byte VERSION = 1;

    private final LockOwner by;
    private final String reason;
    private final Instant at;
    private final LockOwner released;
    /** The fencing token of the claim taken, or 0 when not known (no holder, or a record of an earlier build). */
    private final long releasedToken;

    /**
     * A record that does not know the token of the claim it took.
     *
     * @param by       the process that forced the release
     * @param reason   why, as the operator said
     * @param at       when, by that process's wall clock
     * @param released the holder it took the lock from, or null when the lock was free
     */
    public ForcedRelease(LockOwner by, String reason, Instant at, LockOwner released) {
        this(by, reason, at, released, 0);
    }

    /**
     * @param by            the process that forced the release
     * @param reason        why, as the operator said
     * @param at            when, by that process's wall clock
     * @param released      the holder it took the lock from, or null when the lock was free
     * @param releasedToken the fencing token of the holder's claim it took (positive), or 0 when not known
     */
    public ForcedRelease(LockOwner by, String reason, Instant at, LockOwner released, long releasedToken) {
        this.by = Objects.requireNonNull(by, "by");
        this.reason = reason == null ? "" : reason;
        this.at = Objects.requireNonNull(at, "at");
        this.released = released;
        if (releasedToken < 0 || releasedToken > 0 && released == null) {
            throw new IllegalArgumentException("releasedToken must be a released holder's fencing token (positive) or "
                    + "0, was " + releasedToken + (released == null ? " without a released holder" : ""));
        }
        this.releasedToken = releasedToken;
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

    /** {@return the fencing token of the claim taken from {@link #released()}, when known} */
    public OptionalLong releasedToken() {
        return releasedToken > 0 ? OptionalLong.of(releasedToken) : OptionalLong.empty();
    }

    /** {@return the stored form} */
    public byte[] toBytes() {
        byte[] b = by.toBytes();
        byte[] r = reason.getBytes(StandardCharsets.UTF_8);
        byte[] h = released == null ? new byte[0] : released.toBytes();
        ByteBuffer out = ByteBuffer.allocate(1 + 8 + 4 + r.length + 4 + b.length + 4 + h.length
                + (releasedToken > 0 ? 8 : 0)).put(VERSION).putLong(at.toEpochMilli()).putInt(r.length).put(r)
                .putInt(b.length).put(b).putInt(h.length).put(h);
        if (releasedToken > 0) {
            out.putLong(releasedToken); // the trailer (see the class comment)
        }
        return out.array();
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
            LockOwner released = h.length == 0 ? null : LockOwner.fromBytes(h);
            long token = buf.hasRemaining() ? buf.getLong() : 0;
            if (buf.hasRemaining()) {
                throw new IllegalArgumentException(buf.remaining() + " bytes after the record");
            }
            return new ForcedRelease(by, reason, at, released, token);
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
                + (reason.isEmpty() ? "" : ": " + reason) + (released == null ? "" : ", from " + released.rid())
                + (releasedToken > 0 ? " (token " + releasedToken + ")" : "");
    }
}
