package dev.locker.engine;

import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A claim of a frame set back stays live for a read-back whose second reading spans the learning of the step back. */
class StepBackLearntDuringALateSecondReadingTest extends JudgingScenario {

    private static final Duration BACK = Duration.ofSeconds(40);
    private static final Duration FORWARD = Duration.ofSeconds(45);


    private final SlowReadStore slow = new SlowReadStore(shared);
    private ConsistentKeyDriver bDriver;

    @AfterEach
    void closeB() {
        if (bDriver != null) {
            bDriver.close();
        }
    }

    /**
     * A and B run on one host. B writes its claim, and its read-back takes its first reading; the read is slow. NTP
     * sets the clock back 40 s, and A writes and checks its claim in that frame. B's read ends with A's claim, and its
     * second reading is preempted. Meanwhile another thread of B reads the clock set back, NTP steps it 45 s forward,
     * and that thread reads again before the second reading enters. A's claim has 20 s left on A's clock, so B is
     * refused.
     */
    @Test
    void aClaimOfAFrameSetBackIsAllowedTheWholeWayUpByASecondReadingSpanningTheStepsLearnt() throws Exception {
        assertRefused(true);
    }

    /** With no reading after the step forward, the second reading enters before the guard learns it: B is refused. */
    @Test
    void aClaimOfAFrameSetBackIsAllowedTheWholeWayUpByASecondReadingEnteringBeforeTheStepForwardIsLearnt()
            throws Exception {
        assertRefused(false);
    }

    private void assertRefused(boolean stepForwardLearntFirst) throws Exception {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = new ConsistentKeyDriver(config("b", bTime).build(), slow, false, 16);
        bDriver = b;
        b.readHolder(other);
        clock.advance(Duration.ofSeconds(1));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        ThreadGatedClock.Hooks main = bTime.hooksOf(Thread.currentThread());
        ConsistentKeyClaim[] held = new ConsistentKeyClaim[1];
        // the read-back's first reading entered; its read is in flight while the clock steps back and A claims the lock
        slow.beforeNextRead.set(() -> {
            clock.advance(Duration.ofMillis(500));
            clock.stepWallClock(BACK.negated());
            clock.advance(Duration.ofMillis(500));
            held[0] = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
            clock.advance(Duration.ofMillis(500));
        });
        // the second reading begins after the read; another thread then learns the step back, and maybe the step
        // forward, before the second reading enters
        main.onNanos.put(4, () -> {
            clock.advance(Duration.ofSeconds(1));
            readOnAnotherThread(b); // an exact reading, in turn, learns the step back
            clock.advance(Duration.ofSeconds(4));
            clock.stepWallClock(FORWARD);
            clock.advance(Duration.ofMillis(500));
            main.onWall = () -> {
                clock.advance(Duration.ofMillis(100));
                if (!stepForwardLearntFirst) {
                    clock.advance(Duration.ofMillis(400));
                    return;
                }
                readOnAnotherThread(b);
                clock.advance(Duration.ofMillis(400));
            };
        });
        ConsistentKeyClaim granted = null;
        try {
            granted = b.verify(lock, claim);
        } catch (TemporaryLockingException refused) {
            // A holds: the answer wanted
        }
        assertTrue(held[0] != null && slow.beforeNextRead.get() == null && bTime.allHooksRan(),
                "A's claim and the readings did not come as planned");
        assertTrue(clock.nanoTime() - held[0].deadlineNanos() < 0, "A's claim ran out before B's answer");
        ConsistentKeyClaim grantedToB = granted;
        assertNull(grantedToB, () -> "B was granted token " + grantedToB.fencingToken() + " while A holds token "
                + held[0].fencingToken() + " within its deadline");
    }

    /** Another thread of B reads a row: it reads the clocks at once. */
    private void readOnAnotherThread(ConsistentKeyDriver b) {
        Thread reader = new Thread(() -> b.readHolder(other));
        reader.start();
        try {
            reader.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
