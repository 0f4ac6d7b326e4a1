package dev.locker.api;

import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class KeyColumnTest {

    @Test
    void encodingIsInjectiveAcrossTheKeyColumnBoundary() {
        List<KeyColumn> tricky = List.of(KeyColumn.of("a", ":x"), KeyColumn.of("a:", "x"), KeyColumn.of("a:x", ""),
                KeyColumn.of("a", "x"), KeyColumn.of("ax", ""), KeyColumn.of(new byte[]{0, 0, 0, 1}, new byte[]{'a'}),
                KeyColumn.of(new byte[]{0, 0, 0}, new byte[]{1, 'a'}));
        Set<String> encodings = new HashSet<>();
        for (KeyColumn kc : tricky) {
            assertTrue(encodings.add(java.util.HexFormat.of().formatHex(kc.encoded())), "collision for " + kc);
            assertEquals(kc, KeyColumn.decode(kc.encoded()));
        }
    }

    @Test
    void bytesAreCopiedInAndOut() {
        byte[] k = {'k'};
        KeyColumn kc = KeyColumn.of(k, new byte[]{'c'});
        k[0] = 'x';
        assertArrayEquals(new byte[]{'k'}, kc.key());
        kc.key()[0] = 'y';
        assertArrayEquals(new byte[]{'k'}, kc.key());
    }

    @Test
    void toStringIsLegibleAndEscapesBinary() {
        assertEquals("KeyColumn[user:42/name]", KeyColumn.of("user:42", "name").toString());
        assertEquals("KeyColumn[a\\x00b/\\x2f]", KeyColumn.of("a\u0000b", "/").toString());
        String longName = KeyColumn.of("x".repeat(1000), "").toString();
        assertTrue(longName.contains("(1000 bytes)"), longName);
    }

    @Test
    void badNamesAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of("", "c"));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of("\uDC00", "c"));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of("k", "\uD800"));
        assertThrows(NullPointerException.class, () -> KeyColumn.of((byte[]) null, new byte[0]));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.decode(new byte[]{0, 0, 0, 9, 1}));
    }

    @Test
    void equalityAndOrder() {
        assertEquals(KeyColumn.of("a", "b"), KeyColumn.of("a".getBytes(), "b".getBytes()));
        assertNotEquals(KeyColumn.of("a", "b"), KeyColumn.of("a", "c"));
        assertTrue(KeyColumn.of("a", "b").compareTo(KeyColumn.of("a", "c")) < 0);
        assertEquals(KeyColumn.named("job"), KeyColumn.of("job", ""));
    }
}
