package dev.locker.api;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Objects;

/**
 * Who holds (or claims) a lock, and why: what operators need to see when a lock is stuck.
 *
 * <p>{@code rid} identifies the locker instance and is what ownership is decided on; host, pid, thread and why are
 * for display. {@code since} is when the claim was first written, by the clock of whoever ordered it; it may be null.
 */
public final class LockOwner {

    private final String rid;
    private final String host;
    private final long pid;
    private final String thread;
    private final String why;
    private final Instant since;
    /** {@link #toBytes()}, made on its first call (the fields are final: it never changes). */
    private volatile byte[] encoded;

    /**
     * Owner metadata as a claim records it.
     *
     * @param rid the locker's rid
     * @param host the host of the claiming process
     * @param pid the claiming process's id
     * @param thread the thread that made the claim
     * @param why the reason recorded with the claim, shown to operators and in other processes' exceptions
     * @param since when the claim was made, or null when unknown
     */
    public LockOwner(String rid, String host, long pid, String thread, String why, Instant since) {
        this.rid = Objects.requireNonNull(rid, "rid must not be null");
        this.host = host == null ? "" : host;
        this.pid = pid;
        this.thread = thread == null ? "" : thread;
        this.why = why == null ? "" : why;
        this.since = since;
    }

    /** {@return the locker instance's rid: what ownership is decided on} */
    public String rid() {
        return rid;
    }

    /** {@return the claiming process's host (display only)} */
    public String host() {
        return host;
    }

    /** {@return the claiming process's id (display only)} */
    public long pid() {
        return pid;
    }

    /** {@return the name of the thread that made the claim} */
    public String thread() {
        return thread;
    }

    /** {@return the reason recorded with the claim} */
    public String why() {
        return why;
    }

    /**
     * When the claim was first written, or null if unknown.
     *
     * @return when the claim was first written, or null if unknown
     */
    public Instant since() {
        return since;
    }

    /**
     * {@return this owner with {@code since} set}
     *
     * @param when when the claim was made
     */
    public LockOwner withSince(Instant when) {
        return new LockOwner(rid, host, pid, thread, why, when);
    }

    /**
     * Compact binary form (length-prefixed UTF-8 fields), for backends that store owner metadata as bytes.
     *
     * @return compact binary form (length-prefixed UTF-8 fields), for backends that store owner metadata as bytes
     */
    public byte[] toBytes() {
        byte[] e = encoded;
        if (e == null) {
            e = encode();
            encoded = e;
        }
        return e.clone();
    }

    private byte[] encode() {
        ByteArrayOutputStream out = new ByteArrayOutputStream(64);
        writeString(out, rid);
        writeString(out, host);
        writeLong(out, pid);
        writeString(out, thread);
        writeString(out, why);
        writeLong(out, since == null ? Long.MIN_VALUE : since.toEpochMilli());
        return out.toByteArray();
    }

    /**
     * Inverse of {@link #toBytes()}; throws IllegalArgumentException on bytes it did not write.
     *
     * @param bytes any bytes
     * @return the owner
     */
    public static LockOwner fromBytes(byte[] bytes) {
        return read(ByteBuffer.wrap(bytes));
    }

    /**
     * Reads an owner written by {@link #toBytes()} from {@code buf}'s position, and leaves the position right after
     * it: for formats that store more after the owner. Throws IllegalArgumentException on bytes it did not write.
     *
     * @param buf bytes, from the owner's first
     * @return the owner
     */
    public static LockOwner read(ByteBuffer buf) {
        int length = buf.remaining();
        try {
            String rid = readString(buf);
            String host = readString(buf);
            long pid = buf.getLong();
            String thread = readString(buf);
            String why = readString(buf);
            long since = buf.getLong();
            return new LockOwner(rid, host, pid, thread, why, since == Long.MIN_VALUE ? null : Instant.ofEpochMilli(since));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("not an encoded LockOwner (" + length + " bytes)", e);
        }
    }

    private static void writeString(ByteArrayOutputStream out, String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.write(b.length >>> 24);
        out.write(b.length >>> 16);
        out.write(b.length >>> 8);
        out.write(b.length);
        out.write(b, 0, b.length);
    }

    private static void writeLong(ByteArrayOutputStream out, long v) {
        for (int shift = 56; shift >= 0; shift -= 8) {
            out.write((int) (v >>> shift));
        }
    }

    private static String readString(ByteBuffer buf) {
        int len = buf.getInt();
        if (len < 0 || len > buf.remaining()) {
            throw new IllegalArgumentException("bad length " + len);
        }
        byte[] b = new byte[len];
        buf.get(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof LockOwner)) {
            return false;
        }
        LockOwner other = (LockOwner) o;
        return pid == other.pid && rid.equals(other.rid) && host.equals(other.host) && thread.equals(other.thread)
                && why.equals(other.why) && Objects.equals(since, other.since);
    }

    @Override
    public int hashCode() {
        return Objects.hash(rid, host, pid, thread, why, since);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("rid=").append(rid);
        if (!host.isEmpty()) {
            sb.append(" host=").append(host);
        }
        if (pid > 0) {
            sb.append(" pid=").append(pid);
        }
        if (!thread.isEmpty()) {
            sb.append(" thread=").append(thread);
        }
        if (!why.isEmpty()) {
            sb.append(" why=\"").append(why).append('"');
        }
        if (since != null) {
            sb.append(" since=").append(since);
        }
        return sb.toString();
    }
}
