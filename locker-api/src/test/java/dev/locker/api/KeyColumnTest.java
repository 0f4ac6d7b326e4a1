package dev.locker.api;

import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
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
    void toStringIsTheLegibleNameTheServersShow() {
        assertEquals("user:42#name", KeyColumn.of("user:42", "name").toString());
        assertEquals("schema-migration-42", KeyColumn.named("schema-migration-42").toString());
        assertEquals("a%00b#/", KeyColumn.of("a\u0000b", "/").toString());
        assertEquals(KeyColumn.of("nightly report", "").legible(), KeyColumn.of("nightly report", "").toString());
        String longName = KeyColumn.of("x".repeat(1000), "").toString();
        assertTrue(longName.contains("(1000 bytes)"), longName);
    }

    @Test
    void badNamesAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of("", "c"));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of("\uDC00", "c"));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of("k", "\uD800"));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of((byte[]) null, new byte[0]));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of(new byte[]{1}, null));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.of("k", null));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.named(null));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.decode(new byte[]{0, 0, 0, 9, 1}));
    }

    @Test
    void equalityAndOrder() {
        assertEquals(KeyColumn.of("a", "b"), KeyColumn.of("a".getBytes(), "b".getBytes()));
        assertNotEquals(KeyColumn.of("a", "b"), KeyColumn.of("a", "c"));
        assertTrue(KeyColumn.of("a", "b").compareTo(KeyColumn.of("a", "c")) < 0);
        assertEquals(KeyColumn.named("job"), KeyColumn.of("job", ""));
    }

    @Test
    void aKeyPrefixIsAPrefixOfTheEncodedLocksOnlyPerKeyLength() {
        byte[] p = {'a', 'b'};
        KeyColumn three = KeyColumn.of("abc", "col");
        byte[] start = KeyColumn.encodedPrefix(3, p);
        assertArrayEquals(Arrays.copyOf(three.encoded(), start.length), start);
        assertNotEquals(HexFormat.of().formatHex(KeyColumn.encodedPrefix(2, p)),
                HexFormat.of().formatHex(Arrays.copyOf(three.encoded(), 6)), "another key length");
        assertTrue(three.keyStartsWith(p));
        assertTrue(three.keyStartsWith(new byte[0]));
        assertFalse(KeyColumn.of("a", "bc").keyStartsWith(p), "the column does not count");
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.encodedPrefix(1, p));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.encodedPrefix(0, new byte[0]));
    }

    @Test
    void aLockInfoAndAPageAreValuesWithLegibleText() {
        LockOwner owner = new LockOwner("rid-1", "host", 7, "main", "why", Instant.ofEpochSecond(1));
        LockInfo info = new LockInfo(KeyColumn.of("k", "c"), owner, 42, Instant.ofEpochSecond(61));
        assertEquals(info, new LockInfo(KeyColumn.of("k", "c"), owner, 42, Instant.ofEpochSecond(61)));
        assertEquals(info.hashCode(), new LockInfo(KeyColumn.of("k", "c"), owner, 42,
                Instant.ofEpochSecond(61)).hashCode());
        assertNotEquals(info, new LockInfo(KeyColumn.of("k", "c"), owner, 43, Instant.ofEpochSecond(61)));
        assertEquals("k#c held by rid=rid-1 host=host pid=7 thread=main why=\"why\" since=1970-01-01T00:00:01Z "
                + "token=42 until 1970-01-01T00:01:01Z", info.toString());
        List<LockInfo> locks = new ArrayList<>(List.of(info));
        LockPage page = new LockPage(locks, "next");
        locks.clear();
        assertEquals(List.of(info), page.locks(), "the page keeps its own copy");
        assertEquals(Optional.of("next"), page.nextCursor());
        assertEquals(page, new LockPage(List.of(info), "next"));
        assertEquals(Optional.empty(), LockPage.empty().nextCursor());
        assertThrows(IllegalArgumentException.class, () -> new LockPage(List.of(), ""));
        assertThrows(NullPointerException.class, () -> new LockInfo(null, owner, 1, Instant.EPOCH));
    }

    @Test
    void aLongLockFitsALimitAsAStableStandInThatKeepsItsKeyPrefix() {
        KeyColumn shortLock = KeyColumn.of("index", "value");
        assertSame(shortLock, shortLock.fitTo(64), "a lock within the limit is itself");
        String value = "v".repeat(6000);
        KeyColumn longLock = KeyColumn.of("graphindex:" + value, "c");
        KeyColumn fitted = longLock.fitTo(4096);
        assertTrue(fitted.size() <= 4096, "fits: " + fitted.size());
        assertEquals(fitted, KeyColumn.of("graphindex:" + value, "c").fitTo(4096), "equal locks, equal stand-ins");
        assertNotEquals(fitted, KeyColumn.of("graphindex:" + value, "d").fitTo(4096), "the column counts");
        assertNotEquals(fitted, KeyColumn.of("graphindex:" + value + "w", "c").fitTo(4096), "the whole key counts");
        assertTrue(fitted.keyStartsWith("graphindex:vvv".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        KeyColumn longColumn = KeyColumn.of("k", "c".repeat(100));
        assertTrue(longColumn.fitTo(64).keyStartsWith(new byte[]{'k', 0, 's'}), "a short key is kept whole");
        assertEquals(64, KeyColumn.of("k".repeat(100), "").fitTo(64).size());
        assertThrows(IllegalArgumentException.class, () -> longLock.fitTo(63));
    }

    @Test
    void writeLegibleWritesExactlyTheLegibleNameAndChecksRoom() {
        java.util.Random r = new java.util.Random(7);
        for (int i = 0; i < 5000; i++) {
            byte[] k = new byte[1 + r.nextInt(6)];
            byte[] c = new byte[r.nextInt(4)];
            r.nextBytes(k);
            r.nextBytes(c);
            KeyColumn lock = KeyColumn.of(k, c);
            String legible = lock.legible();
            assertEquals(legible.length(), lock.legibleLength());
            byte[] out = new byte[legible.length() + 4];
            out[0] = 'x';
            out[out.length - 1] = 'y';
            assertEquals(2 + legible.length(), lock.writeLegible(out, 2));
            assertEquals(legible, new String(out, 2, legible.length(), java.nio.charset.StandardCharsets.US_ASCII));
            assertEquals('x', out[0]);
            assertEquals('y', out[out.length - 1]);
        }
        KeyColumn lock = KeyColumn.of("a b", "c");
        assertThrows(IndexOutOfBoundsException.class, () -> lock.writeLegible(new byte[6], 0));
        assertThrows(IndexOutOfBoundsException.class, () -> lock.writeLegible(new byte[7], 1));
    }

    @Test
    void theLegibleNameIsReadableInjectiveAndRoundTripsAnyBytes() {
        assertEquals("migration-7", KeyColumn.named("migration-7").legible());
        assertEquals("vertex:42#name", KeyColumn.of("vertex:42", "name").legible());
        assertEquals("a%23b#c%25d%20e", KeyColumn.of("a#b", "c%d e").legible());
        assertEquals("%2A%3F%5B%5D%24%27%21", KeyColumn.named("*?[]$'!").legible(), "no glob or shell characters");
        assertEquals("%7Btag%7D%00%FF", KeyColumn.of(new byte[] {'{', 't', 'a', 'g', '}', 0, (byte) 0xff}, new byte[0]).legible());
        // the separator and the escape character never appear unescaped inside a part: ("a", ":x") vs ("a:", "x")
        assertNotEquals(KeyColumn.of("a", ":x").legible(), KeyColumn.of("a:", "x").legible());
        assertNotEquals(KeyColumn.of("a#b", "").legible(), KeyColumn.of("a", "b").legible());
        java.util.Random r = new java.util.Random(42);
        for (int i = 0; i < 20000; i++) {
            byte[] k = new byte[1 + r.nextInt(4)];
            byte[] c = new byte[r.nextInt(3)];
            for (int j = 0; j < k.length; j++) {
                k[j] = (byte) "a#%:{} \0".charAt(r.nextInt(8));
            }
            r.nextBytes(c);
            KeyColumn kc = KeyColumn.of(k, c);
            String l = kc.legible();
            assertEquals(kc, KeyColumn.fromLegible(l), l); // read back to the one lock: so legible() is injective
            assertTrue(l.chars().allMatch(ch -> ch > 0x20 && ch < 0x7f), "printable ASCII only: " + l);
        }
        // a key prefix's legible form is a prefix of the legible form of every lock whose key starts with it
        assertTrue(KeyColumn.of("vertex:42", "x").legible().startsWith(KeyColumn.legibleKeyPrefix("vertex:".getBytes())));
        assertTrue(KeyColumn.of("a#", "x").legible().startsWith(KeyColumn.legibleKeyPrefix("a#".getBytes())));
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> KeyColumn.fromLegible("a%4"));
        assertTrue(bad.getMessage().contains("a%4"), bad.getMessage());
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.fromLegible("a%zz"));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.fromLegible("#col"), "the key must not be empty");
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.fromLegible("a#b#c"));
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.fromLegible("a b"), "a space is always escaped");
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.fromLegible("%61"), "one spelling per lock");
        assertThrows(IllegalArgumentException.class, () -> KeyColumn.fromLegible("a%7b"), "upper-case hex only");
    }
}
