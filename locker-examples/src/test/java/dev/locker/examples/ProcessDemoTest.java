package dev.locker.examples;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The README's main command, on file: with four real worker JVMs: the outcome, not the timings. */
class ProcessDemoTest {

    @Test
    void exactlyOneWorkerMigratesAKilledHolderIsTakenOverAndAStaleWriteIsFenced() throws Exception {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        ProcessDemo.Outcome o = ProcessDemo.run(null, 4, new PrintStream(buf, true, StandardCharsets.UTF_8));
        String out = buf.toString(StandardCharsets.UTF_8);
        System.out.println(out);
        assertEquals(1, o.ran(), "exactly one worker ran the migration to the end:\n" + out);
        assertEquals(1, o.recordedRuns(), out);
        assertTrue(o.killedTakenOver(), "the killed holder was taken over:\n" + out);
        assertTrue(o.staleWriteRefused(), "the paused holder's write was refused:\n" + out);
        assertTrue(o.allExited(), "every worker exited:\n" + out);
        assertTrue(out.contains("BUSY") || out.contains("held by rid worker-"), "others are told who holds it:\n" + out);
        assertTrue(out.contains("REFUSED by the target"), out);
        assertTrue(out.contains("nothing to do: migrated by worker-"), "a late worker finds it done:\n" + out);
    }
}
