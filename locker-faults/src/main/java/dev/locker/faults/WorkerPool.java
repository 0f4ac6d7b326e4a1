package dev.locker.faults;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;

/**
 * The idle worker JVMs of one backend, each of which ended its last run cleanly and untouched by a fault.
 *
 * <h2>Why</h2>
 * A worker JVM's start costs more than a second of CPU, and the short profile needs about 130 workers.
 * A JVM that a run's fault never touched can serve the next run of the same backend instead.
 * Every run still gets a new worker and a new locker in it; only the JVM and its loaded classes carry over.
 *
 * <h2>Which JVMs come back</h2>
 * {@link TortureRun} returns a JVM only when it said {@code IDLE}: its run ended and left no thread behind.
 * It keeps out every JVM the fault acted on: SIGKILLed, SIGSTOPped, cut off by a frozen connection.
 * A JVM started with a faked clock (libfaketime) never comes back, and no run takes one from here.
 */
final class WorkerPool {

    private static final Map<String, WorkerPool> BY_BACKEND = new HashMap<>();

    private final Deque<WorkerProcess> idle = new ArrayDeque<>();
    private boolean closed;

    private WorkerPool() {
    }

    /**
     * The pool of {@code backend}'s workers.
     *
     * @param backend the backend's name
     * @return its pool, one per backend
     */
    static synchronized WorkerPool of(String backend) {
        return BY_BACKEND.computeIfAbsent(backend, b -> new WorkerPool());
    }

    /**
     * An idle JVM, or null when there is none.
     *
     * @return the JVM, now the caller's
     */
    synchronized WorkerProcess take() {
        while (!idle.isEmpty()) {
            WorkerProcess w = idle.pollFirst();
            if (w.isIdle()) {
                return w;
            }
            w.process().destroyForcibly();
        }
        return null;
    }

    /**
     * Keeps an idle JVM for a later run; after {@link #close()} it is ended instead.
     *
     * @param worker a JVM that said {@code IDLE} after a run no fault touched
     */
    synchronized void offer(WorkerProcess worker) {
        if (closed || !worker.isIdle()) {
            worker.process().destroyForcibly();
            return;
        }
        idle.addLast(worker);
    }

    /** Ends every idle JVM (end of input makes a worker halt, SIGKILL makes sure) and takes none any more. */
    synchronized void close() {
        closed = true;
        for (WorkerProcess w : idle) {
            try {
                w.process().getOutputStream().close();
            } catch (java.io.IOException ignored) {
                // it is ended below anyway
            }
            w.process().destroyForcibly();
        }
        idle.clear();
    }
}
