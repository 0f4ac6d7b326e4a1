package dev.locker.api;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** KeyColumn.of's encoder-free path gives a strict UTF-8 encoder's bytes, and refuses what that encoder refuses. */
class KeyColumnEncodingTest {

    /** The reference encoding: a strict encoder that reports malformed and unmappable input. */
    private static byte[] strict(String s) throws CharacterCodingException {
        ByteBuffer b = StandardCharsets.UTF_8.newEncoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT).encode(CharBuffer.wrap(s));
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    private static final char[] ALPHABET = {'a', 'Z', '0', '/', 0, 0x7f, 0x80, 0x7ff, 0x800, 0xfffd, 0xffff, 0xfeff,
            0xd7ff, 0xe000, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xd83d, 0xde00};

    @Test
    void keyColumnOfGivesTheStrictEncodersBytesAndRefusesWhatItRefused() {
        Random r = new Random(14);
        int refused = 0;
        for (int n = 0; n < 200_000; n++) {
            char[] cs = new char[1 + r.nextInt(6)];
            for (int i = 0; i < cs.length; i++) {
                cs[i] = r.nextInt(4) == 0 ? (char) r.nextInt(0x10000) : ALPHABET[r.nextInt(ALPHABET.length)];
            }
            String s = new String(cs);
            byte[] expected;
            try {
                expected = strict(s);
            } catch (CharacterCodingException e) {
                refused++;
                assertThrows(IllegalArgumentException.class, () -> KeyColumn.of(s, "c"), s);
                assertThrows(IllegalArgumentException.class, () -> KeyColumn.of("k", s), s);
                continue;
            }
            KeyColumn kc = KeyColumn.of(s, s);
            assertArrayEquals(expected, kc.key(), s);
            assertArrayEquals(expected, kc.column(), s);
            assertEquals(KeyColumn.of(expected, expected), kc);
        }
        assertTrue(refused > 1000, "lone surrogates were tried: " + refused);
    }

    @Test
    void theSharedEmptyColumnIsNeverHandedOut() {
        KeyColumn a = KeyColumn.named("x");
        byte[] c = a.column();
        assertEquals(0, c.length);
        assertNotSame(c, KeyColumn.named("y").column());
        assertEquals(a, KeyColumn.decode(a.encoded()));
        assertEquals(a, KeyColumn.of(new byte[] {'x'}, new byte[0]));
    }
}
