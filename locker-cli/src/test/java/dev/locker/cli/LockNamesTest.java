package dev.locker.cli;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LockNamesTest {

    @Test
    void textIsPrintedAsIsAndEveryOtherByteAsAnEscape() {
        assertEquals("jobs/nightly", LockNames.format("jobs/nightly".getBytes(StandardCharsets.UTF_8)));
        assertEquals("nightly%20report", LockNames.format("nightly report".getBytes(StandardCharsets.UTF_8)));
        assertEquals("100%25", LockNames.format("100%".getBytes(StandardCharsets.UTF_8)));
        assertEquals("café", LockNames.format("café".getBytes(StandardCharsets.UTF_8)));
        assertEquals("%00%00%00%07job%1B[2J", LockNames.format(new byte[] {0, 0, 0, 7, 'j', 'o', 'b', 0x1b, '[', '2',
                'J'}));
        // a right-to-left override would reorder what the terminal shows: escaped
        assertEquals("a%E2%80%AEb", LockNames.format("a\u202Eb".getBytes(StandardCharsets.UTF_8)));
        // not UTF-8 (a lone continuation byte, an overlong form): escaped byte by byte
        assertEquals("%80%C0%AF", LockNames.format(new byte[] {(byte) 0x80, (byte) 0xC0, (byte) 0xAF}));
    }

    @Test
    void whatIsPrintedParsesBackToTheSameBytesForAnyBytes() {
        Random random = new Random(42);
        for (int i = 0; i < 20_000; i++) {
            byte[] b = new byte[random.nextInt(12)];
            random.nextBytes(b);
            assertArrayEquals(b, LockNames.parse(LockNames.format(b), "NAME"), () -> LockNames.format(b));
        }
        String s = "jobs/nightly report é \u2603";
        assertArrayEquals(s.getBytes(StandardCharsets.UTF_8), LockNames.parse(s, "NAME"));
        assertArrayEquals(new byte[] {'a', (byte) 0xff, '%'}, LockNames.parse("a%fF%25", "NAME"));
    }

    @Test
    void aBadEscapeIsRefusedNamingWhatToWrite() {
        for (String bad : new String[] {"50%", "a%4", "%G1", "%%", "x%\u0661\u0662"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LockNames.parse(bad, "NAME"));
            assertTrue(e.getMessage().contains("%25"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> LockNames.parse("a\uD800b", "NAME"));
    }
}
