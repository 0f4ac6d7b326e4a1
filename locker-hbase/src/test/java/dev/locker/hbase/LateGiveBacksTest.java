package dev.locker.hbase;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Pending give-backs are tried until one frees its claim or its claim's lifetime is over, by one thread at most. */
class LateGiveBacksTest {

    @Test
    void aGiveBackIsTriedAgainUntilItFreesItsClaimAndThenTheThreadEnds() throws Exception {
        LateGiveBacks giveBacks = new LateGiveBacks(5, () -> false);
        AtomicInteger tries = new AtomicInteger();
        giveBacks.add(() -> tries.incrementAndGet() == 3, 60_000); // the claim lands before the third try
        assertTrue(awaitNone(giveBacks), "the give-back was never done");
        assertEquals(3, tries.get(), "tried until it freed the claim, then no more");
    }

    @Test
    void aGiveBackWhoseClaimNeverLandsIsDroppedOnceTheClaimsLifetimeIsOver() throws Exception {
        LateGiveBacks giveBacks = new LateGiveBacks(5, () -> false);
        AtomicInteger tries = new AtomicInteger();
        giveBacks.add(() -> {
            tries.incrementAndGet();
            return false;
        }, 50);
        assertTrue(awaitNone(giveBacks), "the give-back was never dropped");
        assertTrue(tries.get() >= 1, "tried at least once: " + tries.get());
    }

    @Test
    void manyPendingGiveBacksShareOneThread() throws Exception {
        LateGiveBacks giveBacks = new LateGiveBacks(20, () -> false);
        AtomicBoolean landed = new AtomicBoolean();
        for (int i = 0; i < 50; i++) {
            giveBacks.add(landed::get, 60_000);
        }
        assertEquals(1, giveBacks.threadsStarted(), "one thread serves every pending give-back");
        landed.set(true);
        assertTrue(awaitNone(giveBacks), "the give-backs were never done");
    }

    @Test
    void aGiveBackThatThrowsIsTriedAgainAndTheOthersGoOn() throws Exception {
        LateGiveBacks giveBacks = new LateGiveBacks(5, () -> false);
        AtomicInteger tries = new AtomicInteger();
        giveBacks.add(() -> {
            if (tries.incrementAndGet() == 1) {
                throw new IllegalStateException("the connection is closing");
            }
            return true;
        }, 60_000);
        assertTrue(awaitNone(giveBacks), "the give-back was never done");
        assertEquals(2, tries.get(), "tried again after it threw");
    }

    @Test
    void aTryThatEndsItsThreadWithAnErrorLeavesTheNextClaimAThreadOfItsOwn() throws Exception {
        LateGiveBacks giveBacks = new LateGiveBacks(5, () -> false);
        giveBacks.add(() -> {
            throw new AssertionError("a failure no try recovers from");
        }, 60_000);
        for (int i = 0; i < 3000 && giveBacks.threadsStarted() == 1 && threadAlive(); i++) {
            Thread.sleep(10); // waits for the first thread's end; nothing is timed
        }
        AtomicInteger tries = new AtomicInteger();
        giveBacks.add(() -> tries.incrementAndGet() > 0, 60_000);
        for (int i = 0; i < 3000 && tries.get() == 0; i++) {
            Thread.sleep(10); // waits for the new thread's first pass; nothing is timed
        }
        assertTrue(tries.get() > 0, "the claim added after the error was tried");
        assertEquals(2, giveBacks.threadsStarted(), "a new thread took over");
    }

    private static boolean threadAlive() {
        return Thread.getAllStackTraces().keySet().stream()
                .anyMatch(t -> t.isAlive() && t.getName().equals("locker-hbase-give-back"));
    }

    @Test
    void noGiveBackIsTriedOnceTheConnectionClosed() throws Exception {
        AtomicBoolean closed = new AtomicBoolean(true);
        LateGiveBacks giveBacks = new LateGiveBacks(5, closed::get);
        AtomicInteger tries = new AtomicInteger();
        giveBacks.add(() -> tries.incrementAndGet() > 0, 60_000);
        assertTrue(awaitNone(giveBacks), "the give-back was never dropped");
        assertEquals(0, tries.get(), "a closed connection cannot give anything back");
    }

    private static boolean awaitNone(LateGiveBacks giveBacks) throws InterruptedException {
        for (int i = 0; i < 3000 && giveBacks.pending() > 0; i++) {
            Thread.sleep(10); // waits for the give-back thread's passes; nothing is timed
        }
        return giveBacks.pending() == 0;
    }
}
