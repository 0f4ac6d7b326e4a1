package dev.locker.api;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * The name of one lock: a row key and a column, both arbitrary bytes.
 *
 * <p>Invariant: immutable (the arrays are copied in and out), and {@link #encoded()} is injective: two key-columns
 * encode to the same bytes only if both their keys and their columns are equal, so {@code ("a", ":x")} and
 * {@code ("a:", "x")} are different locks on every backend. The key must not be empty; the column may be.
 */
public final class KeyColumn implements Comparable<KeyColumn> {

    private final byte[] key;
    private final byte[] column;
    private final int hash;

    private KeyColumn(byte[] key, byte[] column) {
        this.key = key;
        this.column = column;
        this.hash = 31 * Arrays.hashCode(key) + Arrays.hashCode(column);
    }

    /**
     * A key-column from raw bytes; both are copied.
     *
     * @param key the row key
     * @param column the column
     * @return a key-column from raw bytes; both are copied
     */
    public static KeyColumn of(byte[] key, byte[] column) {
        requirePart(key, "key");
        requirePart(column, "column");
        if (key.length == 0) {
            throw new IllegalArgumentException("key must not be empty");
        }
        return new KeyColumn(key.clone(), copy(column));
    }

    /** No lock's arrays are ever changed or handed out, so every empty part can be the same array. */
    private static final byte[] EMPTY = new byte[0];

    private static byte[] copy(byte[] part) {
        return part.length == 0 ? EMPTY : part.clone();
    }

    /**
     * A key-column from two strings, encoded as UTF-8. A string that is not valid UTF-16 (a lone surrogate) is
     * refused instead of being silently replaced by {@code ?}, which would make it collide with the literal name.
     *
     * @param key the row key
     * @param column the column
     * @return a key-column from two strings, encoded as UTF-8
     */
    public static KeyColumn of(String key, String column) {
        requirePart(key, "key");
        requirePart(column, "column");
        byte[] k = utf8(key, "key");
        byte[] c = utf8(column, "column");
        if (k.length == 0) {
            throw new IllegalArgumentException("key must not be empty");
        }
        return new KeyColumn(k, c); // both arrays are fresh (or the shared empty one): no second copy
    }

    /** A null part is the caller's argument error, like a null lock anywhere else: IllegalArgumentException. */
    private static void requirePart(Object part, String what) {
        if (part == null) {
            throw new IllegalArgumentException(what + " must not be null");
        }
    }

    /**
     * A lock on a whole name, for application locks ("run this migration once"): the column is empty.
     *
     * @param name the lock's name, encoded as UTF-8; not empty
     * @return the lock
     */
    public static KeyColumn named(String name) {
        return of(name, "");
    }

    private static byte[] utf8(String s, String what) {
        if (s.isEmpty()) {
            return EMPTY;
        }
        if (!hasSurrogate(s)) {
            // without surrogates every char is a scalar value: String's own encoder is exact, and makes no buffers
            return s.getBytes(StandardCharsets.UTF_8);
        }
        try {
            ByteBuffer buf = StandardCharsets.UTF_8.newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .encode(java.nio.CharBuffer.wrap(s));
            byte[] out = new byte[buf.remaining()];
            buf.get(out);
            return out;
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException(what + " is not valid UTF-16 (lone surrogate?): cannot encode it as UTF-8", e);
        }
    }

    private static boolean hasSurrogate(String s) {
        for (int i = 0, n = s.length(); i < n; i++) {
            if (Character.isSurrogate(s.charAt(i))) {
                return true;
            }
        }
        return false;
    }

    /** {@return a copy of the key bytes (never empty)} */
    public byte[] key() {
        return key.clone();
    }

    /** {@return a copy of the column bytes (may be empty)} */
    public byte[] column() {
        return column.clone();
    }

    /** {@return the key's length in bytes} */
    public int keyLength() {
        return key.length;
    }

    /** {@return the column's length in bytes} */
    public int columnLength() {
        return column.length;
    }

    /**
     * Key plus column length in bytes: what the key size limit is measured against.
     *
     * @return key plus column length in bytes: what the key size limit is measured against
     */
    public int size() {
        return key.length + column.length;
    }

    /**
     * The injective binary form every backend uses as its lock name: a 4-byte big-endian key length, the key, then
     * the column. A backend never splices a lock name into a query, script or field name; it passes these bytes as data.
     *
     * @return the injective binary form every backend uses as its lock name: a 4-byte big-endian key length, the key,
     * then the column
     */
    public byte[] encoded() {
        byte[] out = new byte[4 + key.length + column.length];
        ByteBuffer.wrap(out).putInt(key.length).put(key).put(column);
        return out;
    }

    /**
     * The bytes that {@link #encoded()} of every lock whose key is {@code keyLength} bytes long and starts with
     * {@code keyPrefix} starts with: the length field, then the prefix. The length field comes first, so a key prefix
     * alone is not a prefix of the encoded form; a listing by key prefix visits one such range per key length.
     *
     * @param keyLength the key length in bytes; at least 1 and at least the prefix's length
     * @param keyPrefix the key prefix
     * @return the bytes that {@link #encoded()} of every lock whose key is {@code keyLength} bytes long and starts
     * with {@code keyPrefix} starts with: the length field, then the prefix
     */
    public static byte[] encodedPrefix(int keyLength, byte[] keyPrefix) {
        Objects.requireNonNull(keyPrefix, "keyPrefix must not be null");
        if (keyLength < Math.max(1, keyPrefix.length)) {
            throw new IllegalArgumentException("keyLength " + keyLength + " is shorter than the prefix (" + keyPrefix.length
                    + " bytes) or not positive");
        }
        return ByteBuffer.allocate(4 + keyPrefix.length).putInt(keyLength).put(keyPrefix).array();
    }

    /** The smallest size {@link #fitTo} accepts: room for the digest marker, the digest and one byte of the key. */
    public static final int MIN_FIT_BYTES = 64;

    private static final byte[] DIGEST_MARKER = {0, 's', 'h', 'a', '2', '5', '6', 0};

    /**
     * This lock when its {@link #size()} is at most {@code maxBytes}; otherwise a stand-in of at most {@code maxBytes}:
     * the key's first bytes (so that an operator, {@code holder} and a listing by a short key prefix still see what
     * it is), then {@code \0sha256\0} and the SHA-256 of {@link #encoded()}, with an empty column. Storage layers
     * whose keys may exceed a backend's limit (JanusGraph locks index values of any length) lock the stand-in.
     *
     * <p>Why this is safe: equal locks always give equal stand-ins, so two transactions that want one lock always
     * meet on one claim. Two different long locks share a stand-in only if SHA-256 collides, and then they merely
     * contend (one waits for the other): a lost liveness, never a second holder. A short lock equals a stand-in only
     * if its key carries the marker and the digest of another lock, which nobody does by accident, and the cost would
     * again be contention only. What it costs: a long lock's full name is not shown, and a listing by a key prefix
     * longer than the kept bytes misses it.
     *
     * @param maxBytes the largest {@link #size()} the backend takes
     * @return this lock, or its stand-in
     * @throws IllegalArgumentException when {@code maxBytes} is below {@link #MIN_FIT_BYTES}
     */
    public KeyColumn fitTo(int maxBytes) {
        if (maxBytes < MIN_FIT_BYTES) {
            throw new IllegalArgumentException("maxBytes must be at least " + MIN_FIT_BYTES + ", was " + maxBytes);
        }
        if (size() <= maxBytes) {
            return this;
        }
        byte[] digest;
        try {
            digest = java.security.MessageDigest.getInstance("SHA-256").digest(encoded());
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform must provide SHA-256", e);
        }
        int keep = Math.min(key.length, maxBytes - DIGEST_MARKER.length - digest.length);
        byte[] k = ByteBuffer.allocate(keep + DIGEST_MARKER.length + digest.length)
                .put(key, 0, keep).put(DIGEST_MARKER).put(digest).array();
        return new KeyColumn(k, EMPTY);
    }

    /**
     * Whether the key (not the column) starts with {@code prefix}; an empty prefix matches every key.
     *
     * @param prefix the key prefix, compared bytewise; empty matches every key
     * @return whether the key (not the column) starts with {@code prefix}; an empty prefix matches every key
     */
    public boolean keyStartsWith(byte[] prefix) {
        return prefix.length <= key.length && Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length);
    }

    /**
     * Inverse of {@link #encoded()}.
     *
     * @param encoded bytes from {@link #encoded()}
     * @return the key-column
     */
    public static KeyColumn decode(byte[] encoded) {
        Objects.requireNonNull(encoded, "encoded must not be null");
        if (encoded.length < 4) {
            throw new IllegalArgumentException("encoded key-column too short: " + encoded.length + " bytes");
        }
        ByteBuffer buf = ByteBuffer.wrap(encoded);
        int keyLen = buf.getInt();
        if (keyLen < 1 || keyLen > encoded.length - 4) {
            throw new IllegalArgumentException("encoded key-column has a bad key length " + keyLen);
        }
        byte[] k = new byte[keyLen];
        buf.get(k);
        byte[] c = buf.remaining() == 0 ? EMPTY : new byte[buf.remaining()];
        buf.get(c);
        return new KeyColumn(k, c);
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof KeyColumn)) {
            return false;
        }
        KeyColumn other = (KeyColumn) o;
        return hash == other.hash && Arrays.equals(key, other.key) && Arrays.equals(column, other.column);
    }

    @Override
    public int hashCode() {
        return hash;
    }

    @Override
    public int compareTo(KeyColumn o) {
        int c = Arrays.compareUnsigned(key, o.key);
        return c != 0 ? c : Arrays.compareUnsigned(column, o.column);
    }

    /**
     * The {@link #legible()} name, the one spelling of a lock in messages, the {@code locker} command and the servers.
     * A part longer than 64 bytes is shortened, with its length, so messages stay readable.
     */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder(Math.min(key.length, 64) + Math.min(column.length, 64) + 8);
        shortened(key, sb);
        if (column.length > 0) {
            sb.append('#');
            shortened(column, sb);
        }
        return sb.toString();
    }

    private static void shortened(byte[] part, StringBuilder sb) {
        int limit = 64;
        escape(part.length <= limit ? part : Arrays.copyOf(part, limit), sb);
        if (part.length > limit) {
            sb.append("...(").append(part.length).append(" bytes)");
        }
    }

    /** The bytes a legible name shows as they are; every other byte is written {@code %XX}. */
    private static final boolean[] LEGIBLE = new boolean[128];

    static {
        for (char c = '0'; c <= '9'; c++) {
            LEGIBLE[c] = true;
        }
        for (char c = 'a'; c <= 'z'; c++) {
            LEGIBLE[c] = true;
            LEGIBLE[Character.toUpperCase(c)] = true;
        }
        for (char c : "-_.:,=@+~/".toCharArray()) { // neither glob (Redis MATCH) nor shell characters
            LEGIBLE[c] = true;
        }
    }

    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    /**
     * This lock's name as the servers show it ({@code redis-cli}, {@code mongosh}, {@code hbase shell}): the key, then {@code #} and the column when the column is not empty. Letters,
     * digits and {@code -_.:,=@+~/} stand for themselves; every other byte (space, {@code #}, {@code %}, braces, glob
     * and shell characters, quotes, control and non-ASCII bytes) is {@code %XX} in upper-case hex, so a legible name
     * is safe as a Redis {@code SCAN MATCH} prefix, inside a Redis Cluster hash tag, and pasted into a shell. So
     * {@code KeyColumn.named("job")} is {@code job} and {@code ("vertex:42", "name")} is {@code vertex:42#name}.
     *
     * <p>Injective and canonical: the separator and the escape character never appear unescaped inside a part, so
     * {@link #fromLegible} reads every legible name back to its one lock, and each lock has exactly one legible name.
     * The name is printable ASCII (no space), at most three characters per byte, and a key prefix's
     * {@link #legibleKeyPrefix} is a prefix of the legible name of every lock whose key starts with it, so a backend
     * that orders names can list by prefix with a range.
     *
     * @return this lock's legible name
     */
    public String legible() {
        StringBuilder sb = new StringBuilder(key.length + column.length + 8);
        escape(key, sb);
        if (column.length > 0) {
            sb.append('#');
            escape(column, sb);
        }
        return sb.toString();
    }

    /**
     * The length of {@link #legible()}, in characters (= bytes: the name is ASCII), computed without building it.
     *
     * @return the legible name's length
     */
    public int legibleLength() {
        int n = escapedLength(key);
        return column.length > 0 ? n + 1 + escapedLength(column) : n;
    }

    /**
     * Writes {@link #legible()} as ASCII bytes into {@code out} at {@code offset}, without building the string (for a
     * backend that puts the name inside a key of its own on every call).
     *
     * @param out where to write; needs {@link #legibleLength()} bytes from {@code offset}
     * @param offset where the name starts in {@code out}
     * @return the offset just after the name
     * @throws IndexOutOfBoundsException when {@code out} is too short
     */
    public int writeLegible(byte[] out, int offset) {
        Objects.checkFromIndexSize(offset, legibleLength(), out.length);
        int p = escape(key, out, offset);
        if (column.length > 0) {
            out[p++] = '#';
            p = escape(column, out, p);
        }
        return p;
    }

    private static int escapedLength(byte[] bytes) {
        int n = 0;
        for (byte x : bytes) {
            int b = x & 0xff;
            n += b < 128 && LEGIBLE[b] ? 1 : 3;
        }
        return n;
    }

    private static int escape(byte[] bytes, byte[] out, int p) {
        for (byte x : bytes) {
            int b = x & 0xff;
            if (b < 128 && LEGIBLE[b]) {
                out[p++] = (byte) b;
            } else {
                out[p++] = '%';
                out[p++] = (byte) HEX[b >>> 4];
                out[p++] = (byte) HEX[b & 0xf];
            }
        }
        return p;
    }

    /**
     * The legible form of a key prefix: what the {@link #legible()} name of every lock whose key starts with
     * {@code keyPrefix} starts with.
     *
     * @param keyPrefix a key prefix, possibly empty
     * @return its legible form
     */
    public static String legibleKeyPrefix(byte[] keyPrefix) {
        Objects.requireNonNull(keyPrefix, "keyPrefix must not be null");
        StringBuilder sb = new StringBuilder(keyPrefix.length + 8);
        escape(keyPrefix, sb);
        return sb.toString();
    }

    /**
     * The lock a {@link #legible()} name names.
     *
     * @param legible a legible name, as {@link #legible()} writes it
     * @return the lock it names
     * @throws IllegalArgumentException when {@code legible} is not exactly what {@link #legible()} writes for some
     *     lock (a bad or lower-case escape, an escaped byte that stands for itself, a second {@code #}, an empty key),
     *     naming what is wrong
     */
    public static KeyColumn fromLegible(String legible) {
        Objects.requireNonNull(legible, "legible must not be null");
        int sep = legible.indexOf('#');
        if (sep >= 0 && legible.indexOf('#', sep + 1) >= 0) {
            throw new IllegalArgumentException("not a lock name: '" + legible + "' has more than one '#' (write %23 for a '#' in a key or column)");
        }
        byte[] key = unescape(legible, sep < 0 ? legible : legible.substring(0, sep));
        byte[] column = sep < 0 ? new byte[0] : unescape(legible, legible.substring(sep + 1));
        if (sep >= 0 && column.length == 0) {
            throw new IllegalArgumentException("not a lock name: '" + legible + "' ends with '#' (a lock with no column is written without it)");
        }
        return of(key, column);
    }

    private static void escape(byte[] bytes, StringBuilder sb) {
        for (byte x : bytes) {
            int b = x & 0xff;
            if (b < 128 && LEGIBLE[b]) {
                sb.append((char) b);
            } else {
                sb.append('%').append(HEX[b >>> 4]).append(HEX[b & 0xf]);
            }
        }
    }

    private static byte[] unescape(String whole, String part) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(part.length());
        for (int i = 0; i < part.length(); i++) {
            char c = part.charAt(i);
            if (c == '%') {
                int hi = i + 2 < part.length() ? HEX_DIGITS.indexOf(part.charAt(i + 1)) : -1;
                int lo = hi >= 0 ? HEX_DIGITS.indexOf(part.charAt(i + 2)) : -1;
                if (lo < 0) {
                    throw new IllegalArgumentException("not a lock name: '" + whole + "' has a bad escape at '"
                            + part.substring(i, Math.min(part.length(), i + 3)) + "' (write %XX with two upper-case hex digits)");
                }
                int b = hi << 4 | lo;
                if (b < 128 && LEGIBLE[b]) {
                    throw new IllegalArgumentException("not a lock name: '" + whole + "' escapes '" + (char) b
                            + "', which is written as itself");
                }
                out.write(b);
                i += 2;
            } else if (c < 128 && LEGIBLE[c]) {
                out.write(c);
            } else {
                throw new IllegalArgumentException("not a lock name: '" + whole + "' has '" + c
                        + "', which is written %" + HEX[(c >>> 4) & 0xf] + HEX[c & 0xf] + (c > 0xff ? " per UTF-8 byte" : ""));
            }
        }
        return out.toByteArray();
    }

    private static final String HEX_DIGITS = "0123456789ABCDEF";

    /**
     * Bytes for a diagnostic line: printable ASCII as is, others as {@code \xNN}, shortened. A lock's name in a message
     * is {@link #toString()} (its {@link #legible()} name) instead.
     *
     * @param bytes any bytes
     * @return the bytes with printable ASCII as is, others as {@code \xNN}, shortened past 64 bytes
     */
    public static String printable(byte[] bytes) {
        int limit = 64;
        StringBuilder sb = new StringBuilder();
        int n = Math.min(bytes.length, limit);
        for (int i = 0; i < n; i++) {
            int b = bytes[i] & 0xff;
            if (b >= 0x20 && b < 0x7f && b != '\\' && b != '/') {
                sb.append((char) b);
            } else {
                sb.append(String.format("\\x%02x", b));
            }
        }
        if (bytes.length > limit) {
            sb.append("...(").append(bytes.length).append(" bytes)");
        }
        return sb.toString();
    }
}
