package dev.locker.file;

import java.io.IOException;
import java.nio.channels.ClosedByInterruptException;
import java.util.concurrent.TimeUnit;

/**
 * File I/O that the caller's interrupt flag cannot break, with the flag handed back to the caller afterwards.
 *
 * <p>An NIO file channel closes itself when an interrupted thread enters one of its I/O operations. A lease closed by
 * a cancelled task would then leave its claim to expire, and a run that restored an interrupt would go unrecorded.
 * So the flag is cleared around the operation and set again after it. An interrupt that arrives during the operation
 * closes only that operation's own channel, so the operation is simply run again.
 *
 * <p>Only for operations that open and close their own channel and may run twice. A channel that holds an OS lock
 * must never be closed by an interrupt: such files are held through a {@link java.io.RandomAccessFile}, whose reads
 * and writes no interrupt touches.
 */
final class Uninterruptible {

    private Uninterruptible() {
    }

    /** File I/O on channels of its own. */
    interface Io<T> {
        T run() throws IOException;
    }

    /** Runs {@code io} with the interrupt flag clear, again if an interrupt closed its channel; the flag is kept. */
    static <T> T io(Io<T> io) throws IOException {
        boolean interrupted = Thread.interrupted();
        try {
            while (true) {
                try {
                    return io.run();
                } catch (ClosedByInterruptException e) {
                    Thread.interrupted(); // the interrupt that closed it is the caller's: handed back below
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Sleeps {@code millis} whatever the interrupt flag says, and sets the flag again afterwards if it was set. For
     * short bounded waits that must not be cut short: a release waiting for another process's lock range.
     */
    static void sleep(long millis) {
        boolean interrupted = Thread.interrupted();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        try {
            for (long left = millis; left > 0; ) {
                try {
                    Thread.sleep(left);
                    return;
                } catch (InterruptedException e) {
                    interrupted = true; // the caller's: handed back below, the sleep goes on
                    left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
