package dev.locker.engine;

import dev.locker.api.KeyColumn;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A late read of an earlier state brings that state back neither after a newer one was seen nor after a full watch
 * dropped the newer one: a renewal repeating its expiry lives its time from the renewal.
 */
class LateReadOfAnEarlierStateTest extends JudgingScenario {

    private final List<Thread> threads = new ArrayList<>();
    private final CountDownLatch finish = new CountDownLatch(1);

    @AfterEach
    void tearDown() throws InterruptedException {
        finish.countDown();
        for (Thread t : threads) {
            t.join(5_000);
        }
    }

    /**
     * A and B run on one host. A renews every 10 s for 30 s. A thread of B reads the first renewal and is preempted
     * after the read; meanwhile B's main thread sees the second renewal, and then the preempted thread judges the first.
     * NTP sets the clock back 15 s, and A's next renewal writes the first renewal's expiry again. 26 s later A still
     * holds, so B is refused.
     */
    @Test
    void aRenewalRepeatingTheExpiryOfAStateALateReadBroughtBackLivesItsTimeFromTheRenewal() throws Exception {
        assertRefusedAfterRenewals(true, false);
    }

    /**
     * The same, but B's main thread sees the claims of more locks than its watch keeps before the preempted thread
     * judges the first renewal: B is refused.
     */
    @Test
    void aLateReadOfAnEarlierStateAfterAFullWatchDroppedTheNewerOneDoesNotBringItBack() throws Exception {
        assertRefusedAfterRenewals(true, true);
    }

    /** The same without the preempted thread: the main thread alone reads, and B is refused. */
    @Test
    void aRenewalRepeatingTheExpiryOfAStateBeforeTheLastLivesItsTimeFromTheRenewal() throws Exception {
        assertRefusedAfterRenewals(false, false);
    }

    /** The same with a full watch and no preempted thread: B is refused. */
    @Test
    void aRenewalAfterAFullWatchDroppedItsColumnLivesItsTimeFromTheRenewal() throws Exception {
        assertRefusedAfterRenewals(false, true);
    }

    private void assertRefusedAfterRenewals(boolean lateRead, boolean fullWatch) throws Exception {
        ThreadGatedClock bTime = new ThreadGatedClock(clock);
        ConsistentKeyDriver a = driver("a", clock);
        ConsistentKeyDriver b = driver("b", bTime);
        ConsistentKeyClaim held = a.verify(lock, a.write(lock, owner("a"), EXPIRY, null));
        clock.advance(Duration.ofSeconds(5));
        held = a.renew(lock, held, EXPIRY);
        Preempted late = lateRead ? preemptedRead(b, bTime) : null; // read the state that expires 35 s after the write
        if (!lateRead) {
            b.readHolder(lock);
        }
        clock.advance(Duration.ofSeconds(10));
        held = a.renew(lock, held, EXPIRY);
        b.readHolder(lock); // B's main thread watches the second renewal
        if (fullWatch) {
            ConsistentKeyDriver c = driver("c", clock);
            for (int i = 0; i <= ClaimWatch.MOST; i++) {
                // live claims of other locks, first seen after A's: a full watch drops the oldest
                KeyColumn other = KeyColumn.of("vertex:" + i, "age");
                c.write(other, owner("c"), EXPIRY, null);
                b.readHolder(other);
            }
        }
        if (lateRead) {
            late.resume.countDown();
            late.thread.join(5_000);
            assertTrue(late.judged.getCount() == 0, "the preempted read did not judge its row");
        }
        clock.advance(Duration.ofSeconds(5));
        clock.stepWallClock(Duration.ofSeconds(-15));
        ConsistentKeyClaim renewed = a.renew(lock, held, EXPIRY);
        clock.advance(Duration.ofSeconds(26));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        assertTrue(bTime.allHooksRan(), "a preempted reading never resumed");
        assertRefusedWhileHeld(b, claim, renewed);
    }

    /** A reading thread of B, stopped after its row read until the test resumes it. */
    private static final class Preempted {
        final CountDownLatch read = new CountDownLatch(1);
        final CountDownLatch resume = new CountDownLatch(1);
        final CountDownLatch judged = new CountDownLatch(1);
        Thread thread;
    }

    private Preempted preemptedRead(ConsistentKeyDriver b, ThreadGatedClock bTime) throws InterruptedException {
        Preempted p = new Preempted();
        p.thread = new Thread(() -> {
            // the third monotonic reading comes right after the row read: the thread stops there
            bTime.onNanos(Thread.currentThread(), 3, () -> {
                p.read.countDown();
                await(p.resume);
            });
            b.readHolder(lock);
            p.judged.countDown();
        });
        threads.add(p.thread);
        p.thread.start();
        assertTrue(p.read.await(5, TimeUnit.SECONDS), "the preempted thread did not read the row");
        return p;
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(5, TimeUnit.SECONDS)) {
                throw new IllegalStateException("a gate of the test did not open");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
