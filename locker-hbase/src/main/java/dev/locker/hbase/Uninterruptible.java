package dev.locker.hbase;

import java.util.function.Supplier;

/**
 * Calls that the caller's interrupt flag cannot break, with the flag handed back to the caller afterwards.
 *
 * <p>The HBase client fails a call made on an interrupted thread with an {@code InterruptedIOException}. A lease
 * closed by a cancelled task would then leave its claim to expire, and a run whose task restored an interrupt would go
 * unrecorded. So the flag is cleared around the call and set again after it. An interrupt that arrives during the
 * call fails only that call ({@link HBaseErrors} sets the flag again), so it is made again, a bounded number of times.
 *
 * <p>Only for calls that may run twice: a compare-and-set release, a guarded record write.
 */
final class Uninterruptible {

    /** How often a call cut by an interrupt that arrived during it is made again. */
    private static final int ATTEMPTS = 3;

    private Uninterruptible() {
    }

    /** Runs {@code call} with the interrupt flag clear, again if an interrupt cut it; the flag is kept. */
    static <T> T call(Supplier<T> call) {
        boolean interrupted = Thread.interrupted();
        try {
            for (int attempt = 1; ; attempt++) {
                try {
                    return call.get();
                } catch (RuntimeException e) {
                    if (!Thread.interrupted()) { // not cut by an interrupt: the failure is the call's own
                        throw e;
                    }
                    interrupted = true; // the caller's: handed back below
                    if (attempt >= ATTEMPTS) {
                        throw e;
                    }
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Like {@link #call}, for a call with no answer. */
    static void run(Runnable call) {
        call(() -> {
            call.run();
            return null;
        });
    }
}
