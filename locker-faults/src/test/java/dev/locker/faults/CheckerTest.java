package dev.locker.faults;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The checkers on hand-written timelines: each finding is flagged, and its near miss is not. */
class CheckerTest {

    private static final long MS = 1_000_000L;
    private final Checker checker = new Checker(Duration.ofSeconds(1), Duration.ZERO, Duration.ofSeconds(1));
    private final List<Event> events = new ArrayList<>();

    private void at(long ms, String source, Event.Type type, long token, long deadlineMs, String detail) {
        events.add(new Event(ms * MS, source, type, "L", token, deadlineMs * MS, detail));
    }

    @Test
    void twoHoldsWithinTheirValidityOverlap() {
        at(0, "w0", Event.Type.GRANTED, 1, 1000, "");
        at(500, "w1", Event.Type.GRANTED, 2, 1500, "");
        at(600, "w0", Event.Type.RELEASE, 1, 1000, "");
        at(700, "w1", Event.Type.RELEASE, 2, 1500, "");
        Verdict v = checker.check(events, 0);
        assertEquals(1, v.overlaps());
        assertEquals(100 * MS, v.maxOverlapNanos());
        assertTrue(v.unsafe());
        assertTrue(v.findings().get(0).contains("overlap of 100 ms"), v.findings().get(0));
    }

    @Test
    void aHolderPastItsOwnDeadlineDoesNotOverlapTheNextGrant() {
        at(0, "w0", Event.Type.GRANTED, 1, 900, "");
        at(1000, "w1", Event.Type.GRANTED, 2, 2000, "");
        at(1500, "w0", Event.Type.RELEASE, 1, 0, ""); // released late, but it knew it was invalid from 900 ms
        at(1600, "w1", Event.Type.RELEASE, 2, 2000, "");
        assertEquals(0, checker.check(events, 0).overlaps());
    }

    @Test
    void aHoldInvalidAtItsGrantIsNeverValidEvenOnANegativeMonotonicClock() {
        // System.nanoTime() may be negative (its origin is arbitrary); a worker reports a deadline of 0 for a lease
        // already invalid when granted. Read as a deadline, 0 would lie after every negative instant and make the
        // hold valid until its release
        at(-5000, "w0", Event.Type.GRANTED, 1, 0, "");
        at(-4900, "w1", Event.Type.GRANTED, 2, -3900, "");
        at(-4800, "w0", Event.Type.RELEASE, 1, 0, "");
        at(-4700, "w1", Event.Type.RELEASE, 2, -3900, "");
        assertEquals(0, checker.check(events, 0).overlaps());
        events.clear(); // the near miss: valid at its grant, it overlaps
        at(-5000, "w0", Event.Type.GRANTED, 1, -4000, "");
        at(-4900, "w1", Event.Type.GRANTED, 2, -3900, "");
        at(-4800, "w0", Event.Type.RELEASE, 1, -4000, "");
        at(-4700, "w1", Event.Type.RELEASE, 2, -3900, "");
        assertEquals(1, checker.check(events, 0).overlaps());
    }

    @Test
    void aRenewalObservedExtendsTheValidityAndCanMakeAnOverlap() {
        at(0, "w0", Event.Type.GRANTED, 1, 900, "");
        at(300, "w0", Event.Type.DEADLINE, 0, 1300, "");
        at(1000, "w1", Event.Type.GRANTED, 2, 2000, "");
        at(1500, "w0", Event.Type.RELEASE, 1, 0, "");
        assertEquals(1, checker.check(events, 0).overlaps());
    }

    @Test
    void aLostSignalOrAKillEndsAHold() {
        at(0, "w0", Event.Type.GRANTED, 1, 1000, "");
        at(400, "w0", Event.Type.LOST, 1, 0, "GONE");
        at(500, "w1", Event.Type.GRANTED, 2, 1500, "");
        at(600, "harness", Event.Type.FAULT, 0, 0, "KILL w1");
        at(700, "w2", Event.Type.GRANTED, 3, 1700, "");
        at(900, "w2", Event.Type.RELEASE, 3, 1700, "");
        Verdict v = checker.check(events, 0);
        assertEquals(0, v.overlaps());
        assertEquals(1, v.losses().get("GONE"));
    }

    @Test
    void theSameWorkerNeverOverlapsItself() {
        at(0, "w0", Event.Type.GRANTED, 1, 1000, "");
        at(100, "w0", Event.Type.GRANTED, 2, 1100, ""); // its next cycle (the release line was lost)
        assertEquals(0, checker.check(events, 0).overlaps());
    }

    @Test
    void aWriteAcceptedAfterAHigherGrantToAnotherWorkerIsStale() {
        at(0, "w0", Event.Type.GRANTED, 5, 1000, "");
        at(100, "referee", Event.Type.ACCEPTED, 5, 1000, "from w0");
        at(1100, "w1", Event.Type.GRANTED, 6, 2100, "");
        at(1200, "referee", Event.Type.ACCEPTED, 5, 1000, "from w0 (arrived 200 ms after the writer's deadline)");
        Verdict v = checker.check(events, 0);
        assertEquals(1, v.staleAccepted());
        assertEquals(2, v.writesAccepted());
        assertTrue(v.unsafe());
    }

    @Test
    void aWriteAcceptedBeforeTheNextGrantIsNotStale() {
        at(0, "w0", Event.Type.GRANTED, 5, 1000, "");
        at(900, "referee", Event.Type.ACCEPTED, 5, 1000, "from w0");
        at(1100, "w1", Event.Type.GRANTED, 6, 2100, "");
        at(1200, "referee", Event.Type.STALE, 5, 1000, "from w0, highest 6 by w1");
        Verdict v = checker.check(events, 0);
        assertEquals(0, v.staleAccepted());
        assertEquals(1, v.staleRefused());
        assertFalse(v.unsafe());
    }

    @Test
    void aClashIsUnsafe() {
        at(0, "referee", Event.Type.CLASH, 5, 0, "from w1, already written by w0");
        assertTrue(checker.check(events, 0).unsafe());
    }

    @Test
    void aTakeoverLaterThanExpiryPlusSlackIsALivenessFinding() {
        at(0, "w0", Event.Type.GRANTED, 1, 1000, "");
        at(100, "harness", Event.Type.FAULT, 0, 0, "KILL w0");
        at(2300, "w1", Event.Type.GRANTED, 2, 3300, ""); // bound: 1 s expiry + 1 s slack
        Verdict v = checker.check(events, 0);
        assertEquals(List.of(2200 * MS), v.takeovers());
        assertEquals(1, v.livenessViolations());
        assertTrue(v.stuck());
    }

    @Test
    void aTakeoverWithinTheBoundIsFineAndAKilledWaiterNeedsNone() {
        at(0, "w0", Event.Type.GRANTED, 1, 1000, "");
        at(50, "w2", Event.Type.ACQUIRE, 0, 0, "");
        at(60, "harness", Event.Type.FAULT, 0, 0, "KILL w2"); // a waiter: no takeover to wait for
        at(100, "harness", Event.Type.FAULT, 0, 0, "KILL w0");
        at(1100, "w1", Event.Type.GRANTED, 2, 2100, "");
        Verdict v = checker.check(events, 0);
        assertEquals(List.of(1000 * MS), v.takeovers());
        assertFalse(v.stuck());
    }

    @Test
    void aKillInsideTheReleaseStepStillWaitsForATakeover() {
        at(0, "w0", Event.Type.GRANTED, 1, 1000, "");
        at(200, "w0", Event.Type.RELEASE, 1, 1000, "");
        at(201, "w0", Event.Type.RELEASE_STEP, 0, 0, "");
        at(300, "harness", Event.Type.FAULT, 0, 0, "KILL w0");
        Verdict v = checker.check(events, 0);
        assertEquals(1, v.livenessMissing(), "nobody took the lock after the kill");
    }

    @Test
    void aGrantWaitingOutTheExpiryAfterAHolderClosedItsLeaseIsALivenessFinding() {
        // the bound after a close is lock wait + slack (1 s here), without the expiry
        at(0, "w0", Event.Type.GRANTED, 1, 1000, "");
        at(100, "w0", Event.Type.RELEASE, 1, 900, "");
        at(110, "w0", Event.Type.RELEASED, 1, 0, "closed on an interrupted thread");
        at(120, "harness", Event.Type.FAULT, 0, 0, "CLOSE_INTERRUPTED w0");
        at(1200, "w1", Event.Type.GRANTED, 2, 2200, "");
        Verdict v = checker.check(events, 0);
        assertEquals(1, v.livenessViolations());
        assertTrue(v.stuck());
        events.clear(); // the near miss: granted within the bound
        at(0, "w0", Event.Type.GRANTED, 1, 1000, "");
        at(100, "w0", Event.Type.RELEASE, 1, 900, "");
        at(110, "w0", Event.Type.RELEASED, 1, 0, "closed on an interrupted thread");
        at(120, "harness", Event.Type.FAULT, 0, 0, "CLOSE_INTERRUPTED w0");
        at(900, "w1", Event.Type.GRANTED, 2, 1900, "");
        Verdict near = checker.check(events, 0);
        assertEquals(0, near.livenessViolations());
        assertFalse(near.stuck());
    }

    @Test
    void claimsLeftBehindAreAFinding() {
        assertTrue(checker.check(events, 2).stuck());
        assertFalse(checker.check(events, 0).stuck());
    }

    @Test
    void theRefereeRefusesLowerTokensAndFlagsOneTokenFromTwoWriters() {
        Timeline t = new Timeline();
        try (Referee r = new Referee(t)) {
            assertEquals("OK", r.decide("W w0 L 5 0"));
            assertEquals("OK", r.decide("W w0 L 5 0"));
            assertEquals("CLASH w0", r.decide("W w1 L 5 0"));
            assertEquals("OK", r.decide("W w1 L 6 0"));
            assertEquals("STALE 6", r.decide("W w0 L 5 0"));
            assertEquals("OK", r.decide("W w0 M 1 0"), "locks are judged apart");
            assertTrue(r.decide("W w0 L x 0").startsWith("ERR"));
        }
        List<Event.Type> types = t.events().stream().map(Event::type).toList();
        assertEquals(List.of(Event.Type.ACCEPTED, Event.Type.ACCEPTED, Event.Type.CLASH, Event.Type.ACCEPTED,
                Event.Type.STALE, Event.Type.ACCEPTED), types);
        assertEquals("w1", Referee.writer(t.events().get(2)));
    }

    @Test
    void anEventLineParsesBackWhateverItsText() {
        Event e = new Event(42, "w0", Event.Type.LOST, "L\t1", 7, 9, "GONE\tline\nbreak");
        Event back = Event.parse(e.toLine());
        assertEquals(new Event(42, "w0", Event.Type.LOST, "L 1", 7, 9, "GONE line break"), back);
        assertFalse(Event.isEvent("SLF4J: a log line"));
    }
}
