package dev.locker.mongo;

import com.mongodb.MongoInterruptedException;

import java.util.function.Supplier;

/**
 * Requests that the caller's interrupt flag cannot break, with the flag handed back to the caller afterwards.
 *
 * <p>The MongoDB driver fails any request made on an interrupted thread. A lease closed by a cancelled task would then
 * leave its claim to expire, and a run whose task restored an interrupt would go unrecorded. So the flag is cleared
 * around the request and set again after it. An interrupt that arrives during the request fails only that request,
 * so it is sent again, a bounded number of times.
 *
 * <p>Only for requests that may run twice: a compare-and-delete, a guarded record write.
 */
final class Uninterruptible {

    /** How often a request cut by an interrupt that arrived during it is sent again. */
    private static final int ATTEMPTS = 3;

    private Uninterruptible() {
    }

    /** Runs {@code request} with the interrupt flag clear, again if an interrupt cut it; the flag is kept. */
    static <T> T call(Supplier<T> request) {
        boolean interrupted = Thread.interrupted();
        try {
            for (int attempt = 1; ; attempt++) {
                try {
                    return request.get();
                } catch (MongoInterruptedException e) {
                    Thread.interrupted(); // the interrupt that cut it is the caller's: handed back below
                    interrupted = true;
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

    /** Like {@link #call}, for a request with no answer. */
    static void run(Runnable request) {
        call(() -> {
            request.run();
            return null;
        });
    }
}
