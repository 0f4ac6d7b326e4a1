package dev.locker.file;

import dev.locker.api.LockOwner;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32;

/**
 * The content of one lock's file, or of its records file: the whole lock (its encoded bytes, so that a hashed file
 * name shared by two locks is detected), the last fencing token issued and the claim that holds or held the lock
 * (absent when released), or the lock's records (run once, forced release). A format tag leads, a CRC-32 of
 * everything before it ends the file, so a file not written whole is recognised, never half-read. A file written whole
 * in another format (a newer release) is never mistaken for one not written whole: it is refused
 * ({@link UnknownFormatException}), so a release never grants over a claim it cannot read.
 */
final class LockFile {

    /** "LKF" and the format number in the fourth byte. */
    private static final int TAG = 0x4C4B4600;
    /** Format 2: a claim names its locker's process (format 1, without it, was never released). */
    private static final int FORMAT = 2;

    final byte[] lock;
    long token;
    Claim claim;
    final Map<String, byte[]> records;

    LockFile(byte[] lock, long token, Claim claim, Map<String, byte[]> records) {
        this.lock = lock;
        this.token = token;
        this.claim = claim;
        this.records = records;
    }

    /** A lock never claimed yet. */
    static LockFile empty(byte[] lock) {
        return new LockFile(lock, 0L, null, new TreeMap<>());
    }

    /**
     * One claim: its random id, the session (the rid) of the locker that wrote it and that locker's process
     * ({@link Sessions#PROCESS}), the clock domain and the instant (nanoseconds of that domain) at which it expires
     * unless renewed, its lifetime, and the owner's metadata.
     */
    static final class Claim {
        final byte[] id;
        final String session;
        final String process;
        final String domain;
        final long expiresAt;
        final long lifetimeNanos;
        final LockOwner owner;

        Claim(byte[] id, String session, String process, String domain, long expiresAt, long lifetimeNanos,
                LockOwner owner) {
            this.id = id;
            this.session = session;
            this.process = process;
            this.domain = domain;
            this.expiresAt = expiresAt;
            this.lifetimeNanos = lifetimeNanos;
            this.owner = owner;
        }

        Claim renewed(long newExpiresAt) {
            return new Claim(id, session, process, domain, newExpiresAt, lifetimeNanos, owner);
        }

        boolean is(byte[] claimId) {
            return Arrays.equals(id, claimId);
        }
    }

    byte[] toBytes() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(TAG | FORMAT);
            writeBytes(out, lock);
            out.writeLong(token);
            out.writeBoolean(claim != null);
            if (claim != null) {
                writeBytes(out, claim.id);
                writeString(out, claim.session);
                writeString(out, claim.process);
                writeString(out, claim.domain);
                out.writeLong(claim.expiresAt);
                out.writeLong(claim.lifetimeNanos);
                writeBytes(out, claim.owner.toBytes());
            }
            out.writeInt(records.size());
            for (Map.Entry<String, byte[]> r : records.entrySet()) {
                writeString(out, r.getKey());
                writeBytes(out, r.getValue());
            }
            CRC32 crc = new CRC32();
            crc.update(bytes.toByteArray());
            out.writeInt((int) crc.getValue());
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
        }
        return bytes.toByteArray();
    }

    /**
     * A file that was written whole (its checksum holds, or it is tagged with another format number) but is not a
     * lock file of this format: a newer release's, or something else. Never taken as free.
     */
    static final class UnknownFormatException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        UnknownFormatException(String message) {
            super(message);
        }
    }

    /**
     * @throws UnknownFormatException when {@code bytes} are whole but not a lock file of this format
     * @throws IllegalArgumentException when they are not written whole (the checksum fails)
     */
    static LockFile fromBytes(byte[] bytes) {
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        int tag = bytes.length >= 4 ? buf.getInt(0) : 0;
        if ((tag & 0xFFFFFF00) == TAG && (tag & 0xFF) != FORMAT) {
            throw new UnknownFormatException("a lock file of format " + (tag & 0xFF) + " (this release reads format "
                    + FORMAT + "): written by another release of locker-file");
        }
        if (bytes.length < 8) {
            throw new IllegalArgumentException("not a lock file (" + bytes.length + " bytes)");
        }
        CRC32 crc = new CRC32();
        crc.update(bytes, 0, bytes.length - 4);
        if (buf.getInt(bytes.length - 4) != (int) crc.getValue()) {
            throw new IllegalArgumentException("lock file checksum mismatch (" + bytes.length + " bytes): not written whole");
        }
        if (tag != (TAG | FORMAT)) {
            throw new UnknownFormatException("a whole file (its checksum holds) that does not start with a lock file's "
                    + "tag (" + Integer.toHexString(tag) + ")");
        }
        try {
            buf.getInt();
            byte[] lock = readBytes(buf);
            long token = buf.getLong();
            Claim claim = null;
            if (buf.get() != 0) {
                byte[] id = readBytes(buf);
                String session = readString(buf);
                String process = readString(buf);
                String domain = readString(buf);
                long expiresAt = buf.getLong();
                long lifetime = buf.getLong();
                LockOwner owner = LockOwner.fromBytes(readBytes(buf));
                claim = new Claim(id, session, process, domain, expiresAt, lifetime, owner);
            }
            int n = buf.getInt();
            Map<String, byte[]> records = new TreeMap<>();
            for (int i = 0; i < n; i++) {
                records.put(readString(buf), readBytes(buf));
            }
            if (buf.remaining() != 4) {
                throw new UnknownFormatException("a whole lock file with " + (buf.remaining() - 4) + " bytes too many");
            }
            return new LockFile(lock, token, claim, records);
        } catch (BufferUnderflowException | NegativeArraySizeException | IllegalArgumentException e) {
            if (e instanceof UnknownFormatException) {
                throw e;
            }
            throw new UnknownFormatException("a whole lock file (its checksum holds) that does not parse: " + e);
        }
    }

    private static void writeBytes(DataOutputStream out, byte[] b) throws IOException {
        out.writeInt(b.length);
        out.write(b);
    }

    private static void writeString(DataOutputStream out, String s) throws IOException {
        writeBytes(out, s.getBytes(StandardCharsets.UTF_8));
    }

    private static byte[] readBytes(ByteBuffer buf) {
        int len = buf.getInt();
        if (len < 0 || len > buf.remaining()) {
            throw new IllegalArgumentException("bad length " + len + " in lock file");
        }
        byte[] b = new byte[len];
        buf.get(b);
        return b;
    }

    private static String readString(ByteBuffer buf) {
        return new String(readBytes(buf), StandardCharsets.UTF_8);
    }
}
