package dev.locker.api;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Objects;

/**
 * The record a finished run leaves with its job's lock ({@link Locker#runOnce}, {@link Locker#runAtMostOncePer}):
 * who ran it, when it started and finished (by that process's wall clock), and the fencing token it held. It outlives
 * every claim on the lock: releases, expiry and forced releases leave it alone.
 */
public final class RunRecord {

    private static final byte VERSION = 1;

    private final long token;
    private final Instant startedAt;
    private final Instant finishedAt;
    private final LockOwner ranBy;

    /**
     * A run's record.
     *
     * @param token      the fencing token the run held
     * @param startedAt  when it started, by the running process's wall clock
     * @param finishedAt when it finished, by the same clock
     * @param ranBy      the process that ran it
     */
    public RunRecord(long token, Instant startedAt, Instant finishedAt, LockOwner ranBy) {
        this.token = token;
        this.startedAt = Objects.requireNonNull(startedAt, "startedAt");
        this.finishedAt = Objects.requireNonNull(finishedAt, "finishedAt");
        this.ranBy = Objects.requireNonNull(ranBy, "ranBy");
    }

    /** @return the fencing token the run held */
    public long token() {
        return token;
    }

    /** @return when the run started, by its process's wall clock */
    public Instant startedAt() {
        return startedAt;
    }

    /** @return when the run finished, by its process's wall clock */
    public Instant finishedAt() {
        return finishedAt;
    }

    /** @return the process that ran it (rid, host, pid, thread, why) */
    public LockOwner ranBy() {
        return ranBy;
    }

    /** @return the stored form: a version byte, the token, both instants (epoch ms), the owner's bytes */
    public byte[] toBytes() {
        byte[] owner = ranBy.toBytes();
        return ByteBuffer.allocate(1 + 8 + 8 + 8 + owner.length).put(VERSION).putLong(token)
                .putLong(startedAt.toEpochMilli()).putLong(finishedAt.toEpochMilli()).put(owner).array();
    }

    /**
     * Inverse of {@link #toBytes()}.
     *
     * @param bytes the stored form
     * @return the record
     * @throws IllegalArgumentException for bytes it did not write
     */
    public static RunRecord fromBytes(byte[] bytes) {
        try {
            ByteBuffer buf = ByteBuffer.wrap(bytes);
            if (buf.get() != VERSION) {
                throw new IllegalArgumentException("unknown run record version " + bytes[0]);
            }
            long token = buf.getLong();
            Instant started = Instant.ofEpochMilli(buf.getLong());
            Instant finished = Instant.ofEpochMilli(buf.getLong());
            byte[] owner = new byte[buf.remaining()];
            buf.get(owner);
            return new RunRecord(token, started, finished, LockOwner.fromBytes(owner));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("not a run record (" + bytes.length + " bytes)", e);
        }
    }

    @Override
    public String toString() {
        return "RunRecord[by " + ranBy + ", started " + startedAt + ", finished " + finishedAt + ", token " + token + "]";
    }
}
