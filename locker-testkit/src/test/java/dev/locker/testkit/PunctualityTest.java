package dev.locker.testkit;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A real-time promise is judged again, stretched, only after a run whose signal came late by no more than this JVM's
 * stalls between its due time and the signal explain (clipped to that window, added up, the one still going
 * included). The watch is stalled here by suspending its thread (JDK 17).
 */
class PunctualityTest {

    private static final Duration MS = Duration.ofMillis(1);

    @Test
    void aLateSignalWithoutAStallFailsAtOnce() {
        List<Duration> runs = new ArrayList<>();
        AssertionError e = assertThrows(AssertionError.class, () -> Punctuality.rerunWhileStalled("the promise",
                Duration.ofMillis(1200), expiry -> expiry.dividedBy(10), expiry -> {
                    runs.add(expiry);
                    long now = System.nanoTime();
                    return new Punctuality.Promise(now - MS.toNanos(), now);
                }));
        assertEquals(List.of(Duration.ofMillis(1200)), runs, "one run: nothing stalled");
        assertTrue(e.getMessage().startsWith("the promise: told 1 ms after the validity ended, with expiry 1200 ms"),
                e.getMessage());
    }

    @Test
    void aSignalLateByWhatAStallExplainsRunsAgainStretched() throws Exception {
        assumeSuspendWorks();
        List<Duration> runs = new ArrayList<>();
        Punctuality.rerunWhileStalled("the promise", Duration.ofMillis(100), expiry -> Duration.ofMillis(10), expiry -> {
            runs.add(expiry);
            stallTheWatch(Duration.ofMillis(100));
            long told = System.nanoTime();
            Thread.sleep(20); // the watch wakes and notes the stall
            return new Punctuality.Promise(runs.size() == 1 ? told - MS.toNanos() : told + MS.toNanos(), told);
        });
        assertEquals(List.of(Duration.ofMillis(100), Duration.ofMillis(200)), runs);
    }

    @Test
    void theLastRunIsJudgedWhateverTheStall() {
        assumeSuspendWorks();
        List<Duration> runs = new ArrayList<>();
        assertThrows(AssertionError.class, () -> Punctuality.rerunWhileStalled("the promise", Duration.ofMillis(100),
                expiry -> Duration.ofMillis(10), expiry -> {
                    runs.add(expiry);
                    stallTheWatch(Duration.ofMillis(100));
                    long told = System.nanoTime();
                    Thread.sleep(20);
                    return new Punctuality.Promise(told - MS.toNanos(), told);
                }));
        assertEquals(4, runs.size(), "the expiry doubled three times, then judged: " + runs);
    }

    /**
     * A locker whose loss signal waits for a timeout that does not scale with the expiry (a hung call's 2 s socket
     * timeout) tells a 1.2 s lease's loss about a second after its validity ended, on an idle machine too, and a
     * 2.4 s lease's in time. A 100 ms stall of this JVM elsewhere in the run (a GC pause while a locker opened) does
     * not account for a signal told that late: the promise, broken at the scenario's own expiry, is judged broken.
     */
    @Test
    void aPromiseBrokenByFarMoreThanTheJvmStalledFailsAtItsOwnExpiry() {
        assumeSuspendWorks();
        Duration toldAfter = Duration.ofSeconds(2);
        List<Duration> runs = new ArrayList<>();
        assertThrows(AssertionError.class, () -> Punctuality.rerunWhileStalled("told before the validity ends",
                Duration.ofMillis(1200), expiry -> expiry.dividedBy(10), expiry -> {
                    runs.add(expiry);
                    long start = System.nanoTime();
                    if (runs.size() == 1) {
                        stallTheWatch(Duration.ofMillis(100));
                    }
                    Duration validity = expiry.minus(expiry.dividedBy(10)); // the watchdog's margin off the expiry
                    return new Punctuality.Promise(start + validity.toNanos(), start + toldAfter.toNanos());
                }), () -> "judged kept after the runs " + runs);
        assertEquals(1, runs.size(), "the stall came long before the signal was due: " + runs);
    }

    /**
     * A locker that tells its loss some 280 ms after the validity ended (a fixed delay: in time with twice the expiry).
     * The JVM paused for 250 ms, a pause that ended about 20 ms after the signal fell due: it delayed the signal by
     * those 20 ms at most, and accounts for nothing like the 400 ms the signal came behind its due time.
     */
    @Test
    void aStallThatEndedAsTheSignalFellDueExcusesNoMoreThanItsOverlap() {
        assumeSuspendWorks();
        Duration toldAfter = Duration.ofMillis(630);
        List<Duration> runs = new ArrayList<>();
        assertThrows(AssertionError.class, () -> Punctuality.rerunWhileStalled("told before the validity ends",
                Duration.ofMillis(1200), expiry -> expiry.dividedBy(10), expiry -> {
                    runs.add(expiry);
                    long start = System.nanoTime();
                    if (runs.size() == 1) {
                        stallTheWatch(Duration.ofMillis(250)); // from the start to some 20 ms past the due time
                        Thread.sleep(20); // the watch wakes and notes the stall
                    }
                    // the validity ends at 7/24 of the expiry: 350 ms (due at 230 ms) in the first run, 700 in the second
                    long validUntil = start + expiry.multipliedBy(7).dividedBy(24).toNanos();
                    return new Punctuality.Promise(validUntil, start + toldAfter.toNanos());
                }), () -> "judged kept after the runs " + runs);
        assertEquals(1, runs.size(), "the stall overlapped the signal's window by some 20 ms: " + runs);
    }

    /**
     * Three 100 ms stalls, one after another, between the signal's due time and the signal: 300 of the 350 ms the
     * signal came behind were stalled (each may have held up a different hop: the watchdog, a renewal, the notifier).
     * A correct locker on a loaded machine; the run goes again stretched.
     */
    @Test
    void aSignalLateByWhatSeveralStallsAddUpToRunsAgainStretched() throws Exception {
        assumeSuspendWorks();
        List<Duration> runs = new ArrayList<>();
        Punctuality.rerunWhileStalled("the promise", Duration.ofMillis(1200), expiry -> expiry.dividedBy(10), expiry -> {
            runs.add(expiry);
            long due = System.nanoTime();
            if (runs.size() > 1) {
                return new Punctuality.Promise(due + MS.toNanos(), due);
            }
            for (int i = 0; i < 3; i++) {
                stallTheWatch(Duration.ofMillis(100));
                Thread.sleep(15); // the watch wakes and notes the stall
            }
            return new Punctuality.Promise(due + Duration.ofMillis(120).toNanos(), System.nanoTime());
        });
        assertEquals(List.of(Duration.ofMillis(1200), Duration.ofMillis(2400)), runs);
    }

    /**
     * The JVM stalled from the signal's due time past the signal, and the watch has not woken from that stall yet
     * when the run is judged (a loaded machine runs the judging thread first): the watch notes a stall only when it
     * wakes, so the stall it is still in counts for nothing, and a correct locker fails at once.
     */
    @Test
    void aSignalLateByAStallTheWatchHasNotWokenFromRunsAgainStretched() throws Exception {
        assumeSuspendWorks();
        List<Duration> runs = new ArrayList<>();
        List<Thread> stillStalled = new ArrayList<>();
        try {
            Punctuality.rerunWhileStalled("the promise", Duration.ofMillis(1200), expiry -> expiry.dividedBy(10),
                    expiry -> {
                        runs.add(expiry);
                        long due = System.nanoTime();
                        if (runs.size() > 1) {
                            return new Punctuality.Promise(due + MS.toNanos(), due);
                        }
                        stillStalled.addAll(suspendTheWatch());
                        Thread.sleep(150); // the signal, due now, comes 150 ms later; the watch is still held
                        return new Punctuality.Promise(due + Duration.ofMillis(120).toNanos(), System.nanoTime());
                    });
        } finally {
            resume(stillStalled);
        }
        assertEquals(List.of(Duration.ofMillis(1200), Duration.ofMillis(2400)), runs);
    }

    private static void assumeSuspendWorks() {
        Assumptions.assumeTrue(Runtime.version().feature() < 20, "stalls the watch with Thread.suspend");
    }

    /** Holds the watch's thread still for {@code d}: to the watch, this JVM stalled that long. */
    private static void stallTheWatch(Duration d) throws InterruptedException {
        List<Thread> watches = suspendTheWatch();
        try {
            Thread.sleep(d.toMillis());
        } finally {
            resume(watches);
        }
    }

    /** Suspends the watch's thread, until {@link #resume}: to the watch, this JVM stalls from now. */
    @SuppressWarnings("removal")
    private static List<Thread> suspendTheWatch() {
        List<Thread> watches = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("punctuality-watch") && t.isAlive()) {
                watches.add(t);
            }
        }
        assertTrue(!watches.isEmpty(), "the watch runs");
        watches.forEach(Thread::suspend);
        return watches;
    }

    @SuppressWarnings("removal")
    private static void resume(List<Thread> watches) {
        watches.forEach(Thread::resume);
    }
}
