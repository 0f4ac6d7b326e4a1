package dev.locker.shedlock;

import java.time.Duration;
import java.util.ArrayDeque;

/**
 * What a task running under a {@link LockerLockProvider} lock may ask about it, from the thread that took the lock.
 * ShedLock's executor takes the lock, runs the task and unlocks on one thread, as its {@code LockAssert} assumes.
 *
 * <pre>
 * &#64;Scheduled(cron = "0 0 2 * * *")
 * &#64;SchedulerLock(name = "nightly-report", lockAtMostFor = "30m")
 * void nightlyReport() {
 *     store.write(report(), LockedTask.fencingToken()); // the store refuses a token older than the last it saw
 * }
 * </pre>
 */
public final class LockedTask {

    /** The grants this thread took and has not unlocked, innermost last. */
    private static final ThreadLocal<ArrayDeque<Holding>> HELD = new ThreadLocal<>();

    private LockedTask() {
    }

    /**
     * The fencing token of the innermost lock this thread's task holds: pass it with every write it protects.
     * It strictly exceeds every token issued before for that lock, so a resource can refuse a paused former holder.
     *
     * @return the token
     * @throws IllegalStateException outside a locked task, or once the lock was given back (its lockAtMostFor passed)
     *                               or lost
     */
    public static long fencingToken() {
        return innermost().fencingToken();
    }

    /**
     * The fencing token of the lock {@code name} that this thread's task holds, for a task inside nested locks.
     *
     * @param name the ShedLock lock name, as given to {@code @SchedulerLock}
     * @return the token
     * @throws IllegalStateException when this thread holds no such lock, or it was given back or lost
     */
    public static long fencingToken(String name) {
        ArrayDeque<Holding> held = HELD.get();
        if (held != null) {
            for (java.util.Iterator<Holding> it = held.descendingIterator(); it.hasNext(); ) {
                Holding h = it.next();
                if (h.name().equals(name)) {
                    return h.fencingToken();
                }
            }
        }
        throw new IllegalStateException("this thread holds no ShedLock lock named " + name + " from a LockerLockProvider");
    }

    /**
     * How long the innermost lock's task may still act: until its lockAtMostFor or its lease ends, whichever is first.
     *
     * @return the time left; zero once the lock was given back or lost
     * @throws IllegalStateException outside a locked task
     */
    public static Duration remaining() {
        return innermost().remaining();
    }

    private static Holding innermost() {
        ArrayDeque<Holding> held = HELD.get();
        if (held == null || held.isEmpty()) {
            throw new IllegalStateException("this thread runs no task under a LockerLockProvider lock: call it inside "
                    + "a @SchedulerLock task or a LockingTaskExecutor task");
        }
        return held.getLast();
    }

    /** Records that this thread took {@code h}; forgets grants that ended without this thread's unlock. */
    static void entered(Holding h) {
        ArrayDeque<Holding> held = HELD.get();
        if (held == null) {
            held = new ArrayDeque<>(2);
            HELD.set(held);
        }
        held.removeIf(Holding::isDone);
        held.addLast(h);
    }

    /** Records that this thread's task unlocked {@code h} (a no-op on a thread that did not take it). */
    static void left(Holding h) {
        ArrayDeque<Holding> held = HELD.get();
        if (held == null) {
            return;
        }
        held.removeLastOccurrence(h);
        if (held.isEmpty()) {
            HELD.remove();
        }
    }
}
