package dev.locker.spi;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.channels.ClosedByInterruptException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Pins that a call runs with the interrupt flag clear, is made again when an interrupt cut it, and keeps the flag. */
class UninterruptibleTest {

    /** Fails the way a client fails a call cut by an interrupt. */
    private static final class CutByInterrupt extends RuntimeException {
    }

    private static final Uninterruptible THREE_TIMES = Uninterruptible.retrying(3, CutByInterrupt.class::isInstance);

    @AfterEach
    void clearFlag() {
        Thread.interrupted();
    }

    @Test
    void aCallOnAnInterruptedThreadRunsWithTheFlagClearAndHandsItBack() {
        Thread.currentThread().interrupt();
        List<Boolean> seen = new ArrayList<>();
        String answer = THREE_TIMES.call(() -> {
            seen.add(Thread.currentThread().isInterrupted());
            return "done";
        });
        assertEquals("done", answer);
        assertEquals(List.of(false), seen, "the call runs once, with the flag clear");
        assertTrue(Thread.currentThread().isInterrupted(), "the caller's flag is set again");
    }

    @Test
    void aCallOnAThreadNotInterruptedLeavesTheFlagClear() {
        THREE_TIMES.run(() -> { });
        assertFalse(Thread.currentThread().isInterrupted());
    }

    @Test
    void aCallCutByAnInterruptIsMadeAgainAndTheInterruptIsHandedBack() {
        AtomicInteger calls = new AtomicInteger();
        int answer = THREE_TIMES.call(() -> {
            if (calls.incrementAndGet() == 1) {
                Thread.currentThread().interrupt(); // an interrupt arrives during the call
                throw new CutByInterrupt();
            }
            assertFalse(Thread.currentThread().isInterrupted(), "the next attempt runs with the flag clear");
            return 7;
        });
        assertEquals(7, answer);
        assertEquals(2, calls.get());
        assertTrue(Thread.currentThread().isInterrupted(), "the interrupt that cut the call is the caller's");
    }

    @Test
    void aCallCutByAnInterruptEveryTimeFailsAfterItsAttemptsWithTheFlagSet() {
        AtomicInteger calls = new AtomicInteger();
        CutByInterrupt last = new CutByInterrupt();
        CutByInterrupt thrown = assertThrows(CutByInterrupt.class, () -> THREE_TIMES.run(() -> {
            Thread.currentThread().interrupt();
            throw calls.incrementAndGet() == 3 ? last : new CutByInterrupt();
        }));
        assertSame(last, thrown, "the last attempt's failure is the one thrown");
        assertEquals(3, calls.get());
        assertTrue(Thread.currentThread().isInterrupted());
    }

    @Test
    void aFailureOfTheCallsOwnIsThrownAtOnceAndTheFlagIsKept() {
        Thread.currentThread().interrupt();
        AtomicInteger calls = new AtomicInteger();
        IllegalStateException own = new IllegalStateException("the call's own");
        assertSame(own, assertThrows(IllegalStateException.class, () -> THREE_TIMES.run(() -> {
            calls.incrementAndGet();
            throw own;
        })));
        assertEquals(1, calls.get());
        assertTrue(Thread.currentThread().isInterrupted());
    }

    @Test
    void fileIoWhoseChannelAnInterruptClosedIsOpenedAgainWithItsCheckedFailureKept() throws IOException {
        AtomicInteger calls = new AtomicInteger();
        byte[] read = Uninterruptible.NIO.call(() -> {
            if (calls.incrementAndGet() < 5) {
                Thread.currentThread().interrupt();
                throw new ClosedByInterruptException();
            }
            return new byte[] {1};
        });
        assertEquals(1, read.length);
        assertEquals(5, calls.get());
        assertTrue(Thread.currentThread().isInterrupted());
        IOException own = new IOException("no such file");
        assertSame(own, assertThrows(IOException.class, () -> Uninterruptible.NIO.run(() -> {
            throw own;
        })));
    }

    @Test
    void aSleepOnAnInterruptedThreadEndsWithTheFlagSetAgain() {
        Thread.currentThread().interrupt();
        Uninterruptible.sleep(1);
        assertTrue(Thread.currentThread().isInterrupted());
    }

    @Test
    void aPolicyWithoutAttemptsIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> Uninterruptible.retrying(0, e -> true));
    }
}
