package dev.locker.api;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * How a lock's key or column is written for people, one notation for every tool that shows locks or takes them as
 * arguments (the {@code locker} command, the Spring Boot endpoint): text as is, and {@code %XX} (two hex digits) for
 * any byte. A literal {@code %} is {@code %25}.
 *
 * <p>Invariant: {@link #format} is injective and {@link #parse} inverts it ({@code parse(format(b))} equals {@code b}
 * for any bytes), so whatever a tool prints can be pasted back as an argument. Printing keeps well-formed UTF-8
 * text that is safe on a terminal; it escapes {@code %}, space, control and format characters (which could hide or
 * reorder text on a terminal), and every byte that is not part of well-formed UTF-8.
 */
public final class LockNames {

    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private LockNames() {
    }

    /**
     * The bytes an argument names: UTF-8 of its text, with {@code %XX} read as one byte.
     *
     * @param arg  the name as written
     * @param what what the argument is, for the message ({@code NAME}, {@code --column})
     * @return the bytes it names
     * @throws IllegalArgumentException for a {@code %} not followed by two hex digits, or a lone surrogate
     */
    public static byte[] parse(String arg, String what) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(arg.length());
        int i = 0;
        while (i < arg.length()) {
            char c = arg.charAt(i);
            if (c == '%') {
                int hi = i + 2 < arg.length() ? hex(arg.charAt(i + 1)) : -1;
                int lo = i + 2 < arg.length() ? hex(arg.charAt(i + 2)) : -1;
                if (hi < 0 || lo < 0) {
                    throw new IllegalArgumentException(what + " '" + arg + "' has a bad escape at position " + (i + 1)
                            + ": write a byte as %XX (two hex digits) and a literal % as %25");
                }
                out.write(hi * 16 + lo);
                i += 3;
                continue;
            }
            int cp = arg.codePointAt(i);
            if (Character.isSurrogate(c) && Character.charCount(cp) == 1) {
                throw new IllegalArgumentException(what + " has a lone surrogate at position " + (i + 1)
                        + ": it has no UTF-8 form; write the bytes you mean as %XX");
            }
            byte[] b = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
            out.write(b, 0, b.length);
            i += Character.charCount(cp);
        }
        return out.toByteArray();
    }

    /**
     * Bytes as tools print them; see the class comment.
     *
     * @param bytes a key or a column
     * @return its printed form, which {@link #parse} reads back to the same bytes
     */
    public static String format(byte[] bytes) {
        StringBuilder sb = new StringBuilder(bytes.length + 8);
        int i = 0;
        while (i < bytes.length) {
            int n = sequenceLength(bytes, i);
            if (n > 0) {
                int cp = decode(bytes, i, n);
                if (printable(cp)) {
                    sb.appendCodePoint(cp);
                    i += n;
                    continue;
                }
            }
            escape(sb, bytes[i]);
            i++;
        }
        return sb.toString();
    }

    private static int hex(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    }

    private static void escape(StringBuilder sb, byte b) {
        sb.append('%').append(HEX[(b >> 4) & 0xf]).append(HEX[b & 0xf]);
    }

    private static boolean printable(int cp) {
        if (cp == '%' || cp == ' ') {
            return false;
        }
        int type = Character.getType(cp);
        return !(type == Character.CONTROL || type == Character.FORMAT || type == Character.SURROGATE
                || type == Character.PRIVATE_USE || type == Character.UNASSIGNED || type == Character.LINE_SEPARATOR
                || type == Character.PARAGRAPH_SEPARATOR || type == Character.SPACE_SEPARATOR);
    }

    /** The length of the well-formed UTF-8 sequence at {@code i} (shortest form, no surrogates), or 0. */
    private static int sequenceLength(byte[] b, int i) {
        int lead = b[i] & 0xff;
        int n;
        int min;
        if (lead < 0x80) {
            return 1;
        } else if (lead >= 0xc2 && lead <= 0xdf) {
            n = 2;
            min = 0x80;
        } else if (lead >= 0xe0 && lead <= 0xef) {
            n = 3;
            min = 0x800;
        } else if (lead >= 0xf0 && lead <= 0xf4) {
            n = 4;
            min = 0x10000;
        } else {
            return 0;
        }
        if (i + n > b.length) {
            return 0;
        }
        for (int k = 1; k < n; k++) {
            if ((b[i + k] & 0xc0) != 0x80) {
                return 0;
            }
        }
        int cp = decode(b, i, n);
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            return 0;
        }
        return n;
    }

    private static int decode(byte[] b, int i, int n) {
        int lead = b[i] & 0xff;
        int cp = n == 1 ? lead : n == 2 ? lead & 0x1f : n == 3 ? lead & 0x0f : lead & 0x07;
        for (int k = 1; k < n; k++) {
            cp = (cp << 6) | (b[i + k] & 0x3f);
        }
        return cp;
    }
}
