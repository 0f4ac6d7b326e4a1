package dev.locker.engine;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A claim confirmed after a step of the clock is judged in the frame it was written in, while and after it is held. */
class ConfirmRewriteAfterAStepTest extends JudgingScenario {

    /**
     * A and B run on one host. A writes its claim; NTP steps the clock 20 s forward, and B sees it; A then confirms.
     * B first reads the lock 28 s after A wrote its claim: A holds, so B is refused.
     */
    @Test
    void aClaimConfirmedAfterAForwardStepIsJudgedInTheFrameItWasWrittenIn() {
        assertRefusedAfterAConfirmAcrossAStep(Duration.ofSeconds(20));
    }

    /** The same with a step back of 20 s between A's write and its confirm: B is refused. */
    @Test
    void aClaimConfirmedAfterAStepBackIsJudgedInTheFrameItWasWrittenIn() {
        assertRefusedAfterAConfirmAcrossAStep(Duration.ofSeconds(-20));
    }

    /**
     * The same step back; A crashes once it holds. B first sees the claim 28 s after A wrote it, and 31 s later the
     * claim is free: it lives at most its term from that first sight.
     */
    @Test
    void aClaimConfirmedAfterAStepBackIsFreeATermAfterItsFirstSight() {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        confirmAcrossAStep(a, b, Duration.ofSeconds(-20)); // and A crashes: it never renews or releases
        clock.advance(Duration.ofSeconds(28));
        assertTrue(b.readHolder(lock).isPresent(), "A's claim, 28 s old, is judged dead");
        clock.advance(Duration.ofSeconds(31));
        assertTrue(b.readHolder(lock).isEmpty(), "A's 30 s claim is judged live 31 s after B first saw it");
    }

    private void assertRefusedAfterAConfirmAcrossAStep(Duration step) {
        ConsistentKeyDriver a = driver("a");
        ConsistentKeyDriver b = driver("b");
        ConsistentKeyClaim held = confirmAcrossAStep(a, b, step);
        clock.advance(Duration.ofSeconds(28));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertRefusedWhileHeld(b, claim, held);
    }

    /** A writes its claim, the clock steps by {@code step} and B sees it, then A confirms: its claim is rewritten. */
    private ConsistentKeyClaim confirmAcrossAStep(ConsistentKeyDriver a, ConsistentKeyDriver b, Duration step) {
        b.readHolder(other);
        ConsistentKeyClaim written = a.write(lock, owner("a"), EXPIRY, null);
        clock.advance(Duration.ofMillis(50));
        clock.stepWallClock(step);
        b.readHolder(other); // exact: B sees the step
        return a.verify(lock, written);
    }
}
