package dev.locker.spi;

import java.nio.channels.ClosedByInterruptException;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * Backend calls that the caller's interrupt flag cannot break, with the flag handed back to the caller afterwards.
 *
 * <p>Client libraries fail a call made on an interrupted thread, and NIO closes a channel that such a thread touches.
 * A lease closed by a cancelled task would then leave its claim to expire. A run whose task restored an interrupt
 * would go unrecorded. So the flag is cleared around the call and set again after it.
 *
 * <p>An interrupt that arrives during the call fails only that call, so the call is made again. Each backend says
 * how such a failure looks ({@link #retrying}) and how often the call may be made.
 *
 * <p>Only for calls that may run twice: a compare-and-delete, a guarded record write, a file read.
 */
public final class Uninterruptible {

    /**
     * File I/O on channels of its own. An interrupt closes only that operation's channel, so it is opened again
     * as often as it takes. A channel that holds an OS lock must not run here: an interrupt would drop the lock.
     */
    public static final Uninterruptible NIO = new Uninterruptible(Integer.MAX_VALUE,
            ClosedByInterruptException.class::isInstance);

    private final int attempts;
    private final Predicate<? super Exception> cutByInterrupt;

    private Uninterruptible(int attempts, Predicate<? super Exception> cutByInterrupt) {
        this.attempts = attempts;
        this.cutByInterrupt = cutByInterrupt;
    }

    /**
     * Calls made at most {@code attempts} times in all, again after a failure that {@code cutByInterrupt} accepts.
     *
     * @param attempts       how often a call may be made, at least 1
     * @param cutByInterrupt true for a failure caused by an interrupt that arrived during the call
     * @return the policy
     * @throws IllegalArgumentException when {@code attempts} is below 1
     */
    public static Uninterruptible retrying(int attempts, Predicate<? super Exception> cutByInterrupt) {
        if (attempts < 1) {
            throw new IllegalArgumentException("attempts must be at least 1, was " + attempts);
        }
        return new Uninterruptible(attempts, Objects.requireNonNull(cutByInterrupt, "cutByInterrupt"));
    }

    /**
     * A call that answers.
     *
     * @param <T> its answer
     * @param <E> the checked failure it may throw
     */
    @FunctionalInterface
    public interface Call<T, E extends Exception> {
        /**
         * Makes the call.
         *
         * @return its answer
         * @throws E its failure
         */
        T call() throws E;
    }

    /**
     * A call with no answer.
     *
     * @param <E> the checked failure it may throw
     */
    @FunctionalInterface
    public interface Action<E extends Exception> {
        /**
         * Makes the call.
         *
         * @throws E its failure
         */
        void run() throws E;
    }

    /**
     * Runs {@code call} with the interrupt flag clear, again if an interrupt cut it; the flag is kept.
     *
     * @param call the call
     * @param <T>  its answer
     * @param <E>  the checked failure it may throw
     * @return its answer
     * @throws E the call's own failure, or the last one an interrupt caused once the attempts are spent
     */
    public <T, E extends Exception> T call(Call<T, E> call) throws E {
        boolean interrupted = Thread.interrupted();
        try {
            for (int attempt = 1; ; attempt++) {
                try {
                    return call.call();
                } catch (Exception e) {
                    if (!cutByInterrupt.test(e)) { // the failure is the call's own
                        throw e;
                    }
                    Thread.interrupted(); // the interrupt that cut it is the caller's: handed back below
                    interrupted = true;
                    if (attempt >= attempts) {
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

    /**
     * Like {@link #call}, for a call with no answer.
     *
     * @param action the call
     * @param <E>    the checked failure it may throw
     * @throws E the call's own failure, or the last one an interrupt caused once the attempts are spent
     */
    public <E extends Exception> void run(Action<E> action) throws E {
        call(() -> {
            action.run();
            return null;
        });
    }

    /**
     * Sleeps {@code millis} whatever the interrupt flag says, and sets the flag again afterwards if it was set. For
     * short bounded waits that must not be cut short: a release waiting for another process's lock range.
     *
     * @param millis how long
     */
    public static void sleep(long millis) {
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
