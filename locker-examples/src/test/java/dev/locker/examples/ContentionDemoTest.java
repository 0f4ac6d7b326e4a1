package dev.locker.examples;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ContentionDemoTest {

    @Test
    void theDemoShowsOneWinnerAndWhyTheOtherLost() throws Exception {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        ContentionDemo.run("mem:demo-test", new PrintStream(buf, true, StandardCharsets.UTF_8));
        String out = buf.toString(StandardCharsets.UTF_8);
        assertTrue(out.contains("web-1 won"), out);
        assertTrue(out.contains("web-2 lost"), out);
        assertTrue(out.contains("host=web-1"), "the loser is told who holds the lock: " + out);
        assertTrue(out.contains("why=\"run schema migration 2026-11\""), out);
        assertTrue(out.contains("greater than web-1's"), out);
        assertFalse(out.contains("UNEXPECTED"), out);
    }
}
