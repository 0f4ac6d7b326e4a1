package dev.locker.file;

import dev.locker.api.KeyColumn;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The file name of a lock in the lock directory: legible for the usual names, injective for every lock.
 *
 * <p>A byte that is an ASCII letter, digit, {@code - _ . , + =} stands for itself (a leading {@code .} excepted, so
 * that no lock file is hidden or named {@code .} or {@code ..}, and every internal file of the directory starts with a
 * dot); every other byte is {@code %XX} (upper-case hex). On a case-insensitive file system upper-case letters are
 * escaped too. The name is the escaped key, then, when the column is not empty, {@code @} and the escaped column:
 * {@code @} and {@code %} never appear unescaped, so two different locks never get the same short name. A name longer
 * than {@link #MAX_LEGIBLE} characters (file systems allow 255 bytes) is cut to its first legible characters, then
 * {@code ~} and the SHA-256 of the whole lock in hex: such a name is unique but for a SHA-256 collision, and the lock
 * file stores the whole lock, so a collision is detected and refused, never shared.
 */
final class FileNames {

    /** The longest name kept whole; longer ones are cut and hashed. */
    static final int MAX_LEGIBLE = 180;
    private static final int KEPT_WHEN_HASHED = 110;
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private FileNames() {
    }

    /** The file name of {@code lock}; {@code escapeUpper} on a case-insensitive file system. */
    static String of(KeyColumn lock, boolean escapeUpper) {
        StringBuilder sb = new StringBuilder();
        escape(lock.key(), escapeUpper, sb);
        if (lock.columnLength() > 0) {
            sb.append('@');
            escape(lock.column(), escapeUpper, sb);
        }
        if (sb.length() <= MAX_LEGIBLE) {
            return sb.toString();
        }
        int keep = KEPT_WHEN_HASHED;
        // never cut an escape in two: back up to the '%' that starts it
        for (int i = Math.max(0, keep - 2); i < keep; i++) {
            if (sb.charAt(i) == '%') {
                keep = i;
                break;
            }
        }
        return sb.substring(0, keep) + "~" + HexFormat.of().formatHex(sha256(lock.encoded()));
    }

    /** The name's lock when it is a whole (not hashed) name; null for a hashed name or one this class did not make. */
    static KeyColumn decode(String name) {
        if (name.isEmpty() || name.charAt(0) == '.' || name.indexOf('~') >= 0) {
            return null;
        }
        int at = name.indexOf('@');
        byte[] key = unescape(at < 0 ? name : name.substring(0, at));
        byte[] column = at < 0 ? new byte[0] : unescape(name.substring(at + 1));
        if (key == null || column == null || key.length == 0) {
            return null;
        }
        return KeyColumn.of(key, column);
    }

    /** True for a hashed name (a lock too long to be named whole). */
    static boolean isHashed(String name) {
        return name.indexOf('~') >= 0;
    }

    /** The escaped form of {@code bytes}, as in a file name. */
    static String escape(byte[] bytes, boolean escapeUpper) {
        StringBuilder sb = new StringBuilder();
        escape(bytes, escapeUpper, sb);
        return sb.toString();
    }

    /** A file-name-safe form of any string (for a session file named after a rid). */
    static String escape(String s) {
        return escape(s.getBytes(StandardCharsets.UTF_8), true);
    }

    private static void escape(byte[] bytes, boolean escapeUpper, StringBuilder sb) {
        for (int i = 0; i < bytes.length; i++) {
            int b = bytes[i] & 0xff;
            boolean plain = (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || (b >= 'A' && b <= 'Z' && !escapeUpper)
                    || b == '-' || b == '_' || b == ',' || b == '+' || b == '=' || (b == '.' && sb.length() > 0);
            if (plain) {
                sb.append((char) b);
            } else {
                sb.append('%').append(HEX[b >> 4]).append(HEX[b & 0xf]);
            }
        }
    }

    private static byte[] unescape(String s) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '%') {
                if (i + 2 >= s.length()) {
                    return null;
                }
                int hi = Character.digit(s.charAt(i + 1), 16);
                int lo = Character.digit(s.charAt(i + 2), 16);
                if (hi < 0 || lo < 0) {
                    return null;
                }
                out.write(hi << 4 | lo);
                i += 2;
            } else if (c < 0x80) {
                out.write(c);
            } else {
                return null;
            }
        }
        return out.toByteArray();
    }

    static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform must provide SHA-256", e);
        }
    }
}
