package dev.locker.testkit;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A real-time promise is judged again, stretched, only after a run in which this JVM stalled past its margin. */
class PunctualityTest {

    @Test
    void aBrokenPromiseWithoutAStallFailsAtOnce() {
        List<Duration> runs = new ArrayList<>();
        AssertionError e = assertThrows(AssertionError.class, () -> Punctuality.rerunWhileStalled("the promise",
                Duration.ofMillis(1200), expiry -> Duration.ofDays(1), expiry -> {
                    runs.add(expiry);
                    return false;
                }));
        assertEquals(List.of(Duration.ofMillis(1200)), runs, "one run: no stall came near a day");
        assertTrue(e.getMessage().startsWith("the promise: broken with expiry PT1.2S"), e.getMessage());
    }

    @Test
    void aRunBrokenWhileTheJvmStalledPastTheMarginRunsAgainStretched() throws Exception {
        List<Duration> runs = new ArrayList<>();
        // a margin of zero: any lateness of the watch counts as a stall past it
        Punctuality.rerunWhileStalled("the promise", Duration.ofMillis(100), expiry -> Duration.ZERO, expiry -> {
            runs.add(expiry);
            Thread.sleep(20); // long enough for the watch to wake up several times
            return runs.size() == 2;
        });
        assertEquals(List.of(Duration.ofMillis(100), Duration.ofMillis(200)), runs);
    }

    @Test
    void theLastRunIsJudgedWhateverTheStall() {
        List<Duration> runs = new ArrayList<>();
        assertThrows(AssertionError.class, () -> Punctuality.rerunWhileStalled("the promise", Duration.ofMillis(100),
                expiry -> Duration.ZERO, expiry -> {
                    runs.add(expiry);
                    Thread.sleep(20);
                    return false;
                }));
        assertEquals(4, runs.size(), "the expiry doubled three times, then judged: " + runs);
    }
}
