package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

/** A forward step is taken off a claim written late in a frame that a paused reading opened. */
class ClaimWrittenAfterAPausedStepBackTest extends JudgingScenario {

    private static final Duration PAUSE = Duration.ofSeconds(1);

    /**
     * A and B run on one host. NTP sets the clock back a minute; B's next read of another lock is paused between each
     * wall reading and the monotonic reading after it. A then takes the lock; the clock is set back 30 s, which B sees
     * on another read, and then forward 90 s, which B sees too. B first reads A's claim after that: A still holds, so
     * B is refused.
     */
    @Test
    void aForwardStepIsTakenOffAClaimWrittenLateInAFrameAPausedReadingOpened() throws Exception {
        assertRefusedAfterSteps(true);
    }

    /** The same with B's first read unpaused: B is refused. */
    @Test
    void aForwardStepIsTakenOffAClaimWrittenLateInAFrameAnExactReadingOpened() throws Exception {
        assertRefusedAfterSteps(false);
    }

    private void assertRefusedAfterSteps(boolean pausedRead) throws Exception {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(-60));
        bTime.wallReturnedLate = pausedRead ? PAUSE : Duration.ZERO;
        b.readHolder(other); // both readings paused: the baseline falls to the least the first could show
        bTime.wallReturnedLate = Duration.ZERO;
        clock.advance(Duration.ofSeconds(1));
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.stepWallClock(Duration.ofSeconds(-30));
        b.readHolder(other); // an exact reading: the frame A wrote in is left
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(90));
        b.readHolder(other); // an exact reading: the forward step is recorded
        clock.advance(Duration.ofSeconds(1));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, held);
    }

    /**
     * A and B run on one host. NTP sets the clock back a minute; B's next read of another lock is paused between each
     * wall reading and the monotonic reading after it. A then takes the lock, and half a second later NTP sets the
     * clock forward a minute, which B sees on another read. B first reads A's claim after that: A still holds, so B is
     * refused.
     */
    @Test
    void aForwardStepIsTakenOffAClaimWrittenInTheFrameAPausedReadingOpened() throws Exception {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        clock.advance(Duration.ofSeconds(1));
        clock.stepWallClock(Duration.ofSeconds(-60));
        bTime.wallReturnedLate = PAUSE;
        b.readHolder(other); // both readings paused: the baseline falls to the least the first could show
        bTime.wallReturnedLate = Duration.ZERO;
        clock.advance(Duration.ofSeconds(1));
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofMillis(500));
        clock.stepWallClock(Duration.ofSeconds(60));
        b.readHolder(other); // an exact reading: the forward step is recorded
        clock.advance(Duration.ofSeconds(1));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, held);
    }
}
