package dev.locker.engine;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockerConfig;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Claims are judged consistently across wall-clock steps, whichever reading or thread sees them first. */
class ClaimJudgingAcrossClockStepsTest extends JudgingScenario {

    @Override
    ConsistentKeyDriver driver(String rid) {
        return driver(config(rid, clock).scrubExpired(false));
    }

    /**
     * Our claim is seen by a listing of this locker, its thread then pauses past the claim's expiry while NTP sets the
     * clock back an hour: its read-back reports the claim expired, as it does without the watch.
     */
    @Test
    void aCheckOfOurClaimThatRanOutAfterAListingSawItReportsItExpired() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyClaim claim = a.write(lock, LockerConfig.builder().rid("a").build().owner("t"), EXPIRY, null);
        assertTrue(a.readHolder(lock).isPresent(), "a listing sees our claim");
        clock.advance(EXPIRY.plusSeconds(1)); // the claiming thread is paused (a GC) before its read-back
        clock.stepWallClock(Duration.ofHours(-1));
        assertThrows(ExpiredLockException.class, () -> a.verify(lock, claim));
    }

    /**
     * C judges A's claim dead, then NTP sets C's clock back an hour: C still judges it dead, instead of an hour more,
     * as it would have had it seen the claim alive once.
     */
    @Test
    void aClaimJudgedDeadStaysDeadAfterTheClockIsSetBack() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver c = driver("c");
        a.verify(lock, a.write(lock, LockerConfig.builder().rid("a").build().owner("t"), EXPIRY, null));
        clock.advance(EXPIRY.plusSeconds(1)); // A crashed without releasing
        assertTrue(c.readHolder(lock).isEmpty(), "C sees A's claim alive after its expiry");
        clock.stepWallClock(Duration.ofHours(-1));
        clock.advance(Duration.ofSeconds(1));
        assertTrue(c.readHolder(lock).isEmpty(), "A's claim, judged dead, lives again after the clock went back an hour");
    }

    /**
     * A reading taken before a 1 h step enters the guard after one taken after it: a claim written before the step is
     * judged 1 h early, not 2 h, however the readings of two threads interleave.
     */
    @Test
    void aStepIsCountedOnceWhenAReadingTakenBeforeItEntersAfterIt() {
        WallStepGuard guard = new WallStepGuard(LockerConfig.builder().rid("g").expiry(EXPIRY).lockWait(LOCK_WAIT)
                .timeSource(clock).build());
        clock.advance(Duration.ofSeconds(1));
        long staleBefore = clock.nanoTime();
        Instant staleWall = clock.now();
        long staleAfter = clock.nanoTime(); // this thread is preempted before it enters the guard
        clock.advance(Duration.ofMillis(10));
        clock.stepWallClock(Duration.ofHours(1));
        guard.judgingTime(clock.nanoTime(), clock.now(), clock.nanoTime());
        guard.judgingTime(staleBefore, staleWall, staleAfter);
        clock.advance(Duration.ofMillis(10));
        Instant wall = clock.now();
        Duration lag = Duration.between(guard.judgingTime(clock.nanoTime(), wall, clock.nanoTime())
                .forClaimWrittenAt(Instant.EPOCH), wall);
        assertTrue(lag.compareTo(Duration.ofHours(1).plus(LOCK_WAIT)) <= 0,
                () -> "a claim written before a 1 h step is judged at " + lag + " before the wall clock");
    }

    /**
     * The guard sees a 1 min step back, then a reading taken before it enters late. A claim written while the clock was
     * back is still judged a minute early once the clock steps forward again.
     */
    @Test
    void aStepBackSeenByTheGuardStaysSeenWhenAReadingTakenBeforeItEntersAfterIt() {
        WallStepGuard guard = new WallStepGuard(LockerConfig.builder().rid("g").expiry(EXPIRY).lockWait(LOCK_WAIT)
                .timeSource(clock).build());
        clock.advance(Duration.ofSeconds(1));
        long staleBefore = clock.nanoTime();
        Instant staleWall = clock.now();
        long staleAfter = clock.nanoTime(); // this thread is preempted before it enters the guard
        clock.advance(Duration.ofMillis(10));
        clock.stepWallClock(Duration.ofMinutes(-1));
        guard.judgingTime(clock.nanoTime(), clock.now(), clock.nanoTime());
        guard.judgingTime(staleBefore, staleWall, staleAfter);
        clock.advance(Duration.ofSeconds(4));
        Instant writtenAt = clock.now(); // a claim of another locker on this host, in the frame set back
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofMinutes(1));
        clock.advance(Duration.ofSeconds(1));
        Instant wall = clock.now();
        Duration lag = Duration.between(guard.judgingTime(clock.nanoTime(), wall, clock.nanoTime())
                .forClaimWrittenAt(writtenAt), wall);
        assertTrue(lag.compareTo(Duration.ofMinutes(1)) >= 0,
                () -> "a claim written while the clock was set back a minute is judged only " + lag + " early");
    }

    /**
     * A takes a 30 s claim and crashes; NTP sets the host's clock back a year, and C's guard reads the clock across the
     * step. When C first looks, 31 s after A wrote it, the claim is dead.
     */
    @Test
    @Disabled("a step back the guard saw is not allowed for: a claim written before it and first seen after lives its "
            + "whole term from there")
    void aClaimWrittenBeforeASeenStepBackIsFreeOnceItsTimeRanOut() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver c = driver("c");
        KeyColumn other = KeyColumn.of("vertex:43", "name");
        a.verify(lock, a.write(lock, LockerConfig.builder().rid("a").build().owner("t"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(1));
        c.readHolder(other);
        clock.stepWallClock(Duration.ofDays(-365));
        c.readHolder(other);
        clock.advance(EXPIRY);
        assertTrue(c.readHolder(lock).isEmpty(), "A's claim, 31 s after A wrote it for 30 s, is judged live by C");
    }

    /**
     * The same claim, first seen after NTP set the clock back a year: it lives at most its term (30 s) from that first
     * sight, not a year.
     */
    @Test
    void aClaimWrittenBeforeAStepBackAndFirstSeenAfterItLivesAtMostItsTermFromThere() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver c = driver("c");
        a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(1));
        c.readHolder(other);
        clock.stepWallClock(Duration.ofDays(-365));
        c.readHolder(other);
        clock.advance(EXPIRY);
        assertTrue(c.readHolder(lock).isPresent(), "C's first sight of A's claim");
        clock.advance(EXPIRY.plusSeconds(1));
        assertTrue(c.readHolder(lock).isEmpty(), "A's claim, first seen 31 s ago with a term of 30 s, is judged live");
    }

    /**
     * A crashed; C took the lock over A's dead claim, which nobody scrubbed. NTP sets the clock back an hour: C's next
     * check still finds its own claim the holder, not A's claim that C already judged dead.
     */
    @Test
    void aHolderKeepsItsLockWhenTheClockIsSetBackOverAClaimItJudgedDead() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver c = driver("c");
        a.verify(lock, a.write(lock, LockerConfig.builder().rid("a").build().owner("t"), EXPIRY, null));
        clock.advance(EXPIRY.plusSeconds(1)); // A crashed without releasing
        ConsistentKeyClaim held = c.verify(lock, c.write(lock, LockerConfig.builder().rid("c").build().owner("t"),
                EXPIRY, null));
        clock.stepWallClock(Duration.ofHours(-1));
        clock.advance(Duration.ofSeconds(1));
        c.verify(lock, held);
    }
}
