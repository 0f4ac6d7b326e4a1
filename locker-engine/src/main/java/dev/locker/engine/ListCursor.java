package dev.locker.engine;

import java.util.Base64;
import java.util.Objects;

/**
 * The opaque cursor between two pages of a listing ({@link dev.locker.api.Locker#list}): a backend's tag and a fixed
 * number of binary fields saying where the listing stopped, as one URL-safe string {@code tag.field.field...} (each
 * field base64url without padding; an empty field is the empty string).
 *
 * <p>Invariant: {@link #decode} accepts exactly what {@link #encode} produced with the same tag and field count, and
 * refuses anything else with an {@link IllegalArgumentException} naming the cursor, so a backend can decode it before
 * any I/O and a cursor of another backend (or a corrupted one) is an argument error, never a backend failure.
 */
public final class ListCursor {

    private static final Base64.Encoder ENCODER = Base64.getUrlEncoder().withoutPadding();
    private static final Base64.Decoder DECODER = Base64.getUrlDecoder();

    private ListCursor() {
    }

    /** The cursor for {@code fields} under {@code tag} (letters and digits only). */
    public static String encode(String tag, byte[]... fields) {
        StringBuilder sb = new StringBuilder(checkTag(tag));
        for (byte[] f : fields) {
            sb.append('.').append(ENCODER.encodeToString(Objects.requireNonNull(f, "a cursor field must not be null")));
        }
        return sb.toString();
    }

    /**
     * The {@code count} fields of a cursor {@link #encode} made with {@code tag}.
     *
     * @throws IllegalArgumentException when {@code cursor} is not such a cursor
     */
    public static byte[][] decode(String cursor, String tag, int count) {
        Objects.requireNonNull(cursor, "cursor must not be null");
        String[] parts = cursor.split("\\.", -1);
        if (parts.length != count + 1 || !parts[0].equals(checkTag(tag))) {
            throw notOurs(cursor, tag);
        }
        byte[][] out = new byte[count][];
        for (int i = 0; i < count; i++) {
            try {
                out[i] = DECODER.decode(parts[i + 1]);
            } catch (IllegalArgumentException e) {
                throw notOurs(cursor, tag);
            }
        }
        return out;
    }

    /** The refusal names no tag: a tag is internal, and the user needs to know what to do instead. */
    private static IllegalArgumentException notOurs(String cursor, String tag) {
        String shown = cursor.length() > 80 ? cursor.substring(0, 80) + "..." : cursor;
        return new IllegalArgumentException("cursor '" + shown + "' was not issued by this locker's listing: it may come "
                + "from another backend or another prefix's listing, or be damaged; start again without a cursor (null "
                + "for the first page), then pass each page's nextCursor unchanged with the same prefix");
    }

    private static String checkTag(String tag) {
        if (tag == null || tag.isEmpty() || !tag.chars().allMatch(Character::isLetterOrDigit)) {
            throw new IllegalArgumentException("cursor tag must be letters and digits, was " + tag);
        }
        return tag;
    }
}
