package dev.locker.engine;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * One daemon thread that runs entries when they fall due, on the system's monotonic clock. An entry carries its own
 * due time and its slot in the timer's heap ({@link Timed}), so scheduling, rescheduling and cancelling allocate
 * nothing: with many locks held, a scheduled executor's future, callable and map entry per lock were most of what
 * a held lock cost the heap. An entry is scheduled at most once at a time (scheduling it again moves it).
 *
 * @param <E> the entries, handed to the handler when due
 */
final class Timer<E extends Timer.Timed> {

    private static final Logger log = LoggerFactory.getLogger(Timer.class);

    /**
     * What a timer keeps in an entry: two fields of the entry's own, which belong to the timer (read and written under
     * its lock only). An entry starts with its index at -1 (not scheduled).
     */
    interface Timed {
        /** The entry's slot in the heap, or -1 when it is not scheduled. */
        int timerIndex();

        void timerIndex(int i);

        long timerDue();

        void timerDue(long due);
    }

    /**
     * An entry that can be scheduled in two timers at once: a timer made with {@code secondSlot} keeps it in these
     * fields instead (a held lock's watchdog and its renewal, in one object).
     */
    interface TwoSlots extends Timed {
        int timerIndex2();

        void timerIndex2(int i);

        long timerDue2();

        void timerDue2(long due);
    }

    private final String threadName;
    /** Keeps a {@link TwoSlots} entry in its second slot. */
    private final boolean secondSlot;
    private final Consumer<E> handler;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private Timed[] heap = new Timed[16];
    private int size;
    private boolean shutdown;
    private Thread thread;
    /**
     * When the thread's current wait ends by itself: it is signalled only for an entry due before that (else it
     * would wake, find nothing due, and wait again: a wake-up and a condition node per schedule for nothing).
     * {@code Long.MAX_VALUE} with {@link #idle}: it waits for a signal.
     */
    private long wakesAt;
    private boolean idle;

    Timer(String threadName, Consumer<E> handler) {
        this(threadName, false, handler);
    }

    /** A timer that keeps a {@link TwoSlots} entry in its second slot when {@code secondSlot}. */
    Timer(String threadName, boolean secondSlot, Consumer<E> handler) {
        this.threadName = threadName;
        this.secondSlot = secondSlot;
        this.handler = handler;
    }

    private int indexOf(Timed e) {
        return secondSlot && e instanceof TwoSlots ? ((TwoSlots) e).timerIndex2() : e.timerIndex();
    }

    private void index(Timed e, int i) {
        if (secondSlot && e instanceof TwoSlots) {
            ((TwoSlots) e).timerIndex2(i);
        } else {
            e.timerIndex(i);
        }
    }

    private long dueOf(Timed e) {
        return secondSlot && e instanceof TwoSlots ? ((TwoSlots) e).timerDue2() : e.timerDue();
    }

    private void due(Timed e, long due) {
        if (secondSlot && e instanceof TwoSlots) {
            ((TwoSlots) e).timerDue2(due);
        } else {
            e.timerDue(due);
        }
    }

    /** Runs {@code e} after {@code delayNanos} (moving it if it was scheduled); false once the timer is shut down. */
    boolean schedule(E e, long delayNanos) {
        long due = System.nanoTime() + Math.max(0, delayNanos);
        lock.lock();
        try {
            if (shutdown) {
                return false;
            }
            if (thread == null || !thread.isAlive()) { // none yet, or it died (it must not, see work)
                thread = new Thread(this::work, threadName);
                thread.setDaemon(true);
                thread.start();
            }
            due(e, due);
            int i = indexOf(e);
            if (i < 0) {
                if (size == heap.length) {
                    heap = Arrays.copyOf(heap, size * 2);
                }
                i = size++;
                heap[i] = e;
                index(e, i);
                siftUp(i);
            } else {
                siftUp(i);
                siftDown(indexOf(e));
            }
            if (heap[0] == e && (idle || due - wakesAt < 0)) {
                changed.signal();
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Unschedules {@code e} if it is scheduled. */
    void cancel(E e) {
        lock.lock();
        try {
            if (indexOf(e) >= 0) {
                removeAt(indexOf(e));
            }
        } finally {
            lock.unlock();
        }
    }

    boolean isShutdown() {
        lock.lock();
        try {
            return shutdown;
        } finally {
            lock.unlock();
        }
    }

    /** Drops every scheduled entry and stops the thread (interrupting an entry that runs). */
    void shutdownNow() {
        Thread t;
        lock.lock();
        try {
            shutdown = true;
            for (int i = 0; i < size; i++) {
                index(heap[i], -1);
                heap[i] = null;
            }
            size = 0;
            changed.signalAll();
            t = thread;
        } finally {
            lock.unlock();
        }
        if (t != null && t != Thread.currentThread()) {
            t.interrupt();
        }
    }

    @SuppressWarnings("unchecked")
    private void work() {
        while (true) {
            E next;
            lock.lock();
            try {
                while (true) {
                    if (shutdown) {
                        return;
                    }
                    if (size == 0) {
                        idle = true;
                        try {
                            changed.awaitUninterruptibly();
                        } finally {
                            idle = false;
                        }
                        continue;
                    }
                    long now = System.nanoTime();
                    long wait = dueOf(heap[0]) - now;
                    if (wait <= 0) {
                        next = (E) heap[0];
                        removeAt(0);
                        break;
                    }
                    wakesAt = now + wait;
                    try {
                        changed.awaitNanos(wait);
                    } catch (InterruptedException e) {
                        // shutdownNow interrupts: the loop sees it
                    }
                }
            } finally {
                lock.unlock();
            }
            try {
                handler.accept(next);
            } catch (RuntimeException e) {
                log.debug("A timed task on {} failed: {}", threadName, e.toString(), e);
            } catch (Throwable e) { // an Error, or a checked exception thrown undeclared (Kotlin, sneaky throws): the
                // one thread of every later entry must live on
                log.warn("A timed task on {} failed: {}", threadName, e.toString(), e);
            }
            if (Thread.interrupted() && isShutdown()) {
                return;
            }
        }
    }

    private void removeAt(int i) {
        Timed gone = heap[i];
        index(gone, -1);
        int last = --size;
        if (i != last) {
            Timed moved = heap[last];
            heap[last] = null;
            heap[i] = moved;
            index(moved, i);
            siftDown(i);
            if (indexOf(moved) == i) {
                siftUp(i);
            }
        } else {
            heap[last] = null;
        }
    }

    private void siftUp(int i) {
        Timed e = heap[i];
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            Timed p = heap[parent];
            if (dueOf(e) - dueOf(p) >= 0) {
                break;
            }
            heap[i] = p;
            index(p, i);
            i = parent;
        }
        heap[i] = e;
        index(e, i);
    }

    private void siftDown(int i) {
        Timed e = heap[i];
        int half = size >>> 1;
        while (i < half) {
            int child = 2 * i + 1;
            Timed c = heap[child];
            int right = child + 1;
            if (right < size && dueOf(heap[right]) - dueOf(c) < 0) {
                child = right;
                c = heap[child];
            }
            if (dueOf(e) - dueOf(c) <= 0) {
                break;
            }
            heap[i] = c;
            index(c, i);
            i = child;
        }
        heap[i] = e;
        index(e, i);
    }

    /** For tests: how many entries are scheduled. */
    int size() {
        lock.lock();
        try {
            return size;
        } finally {
            lock.unlock();
        }
    }

}
