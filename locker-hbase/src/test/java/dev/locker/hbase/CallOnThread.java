package dev.locker.hbase;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * A call on a thread of its own, for tests that interrupt it: its answer or its failure, and whether its interrupt
 * flag was set when it ended.
 *
 * @param <T> the call's answer
 */
final class CallOnThread<T> {

    /** A call with no answer. */
    @FunctionalInterface
    interface Action {
        void run() throws Exception;
    }

    final AtomicReference<T> answer = new AtomicReference<>();
    final AtomicReference<Throwable> failed = new AtomicReference<>();
    final AtomicBoolean flagSet = new AtomicBoolean();
    final Thread thread;

    private CallOnThread(String name, Callable<T> call) {
        thread = new Thread(() -> {
            try {
                answer.set(call.call());
            } catch (Throwable t) {
                failed.set(t);
            } finally {
                flagSet.set(Thread.interrupted());
            }
        }, name);
    }

    /** Starts {@code call} on a thread named {@code name}. */
    static <T> CallOnThread<T> start(String name, Callable<T> call) {
        CallOnThread<T> c = new CallOnThread<>(name, call);
        c.thread.start();
        return c;
    }

    /** Starts {@code action} on a thread named {@code name}. */
    static CallOnThread<Void> run(String name, Action action) {
        return start(name, () -> {
            action.run();
            return null;
        });
    }

    /**
     * Waits up to a minute for the call's end. The calls under test wait ten minutes or more, so one still running
     * lost what should have ended it.
     */
    void awaitEnd(String stillRunning) throws InterruptedException {
        thread.join(Duration.ofMinutes(1).toMillis());
        assertFalse(thread.isAlive(), stillRunning);
    }

    @Override
    public String toString() {
        return answer.get() + " / " + failed.get();
    }
}
