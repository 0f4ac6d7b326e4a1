package dev.locker.engine;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Whether one locker is closed, and the wait of its close for operations in flight. Once closed it stays closed:
 * every call that would start I/O fails clearly, and a claim under way withdraws on seeing the flag.
 */
final class Closing {

    /** The engine logs under one name, whichever of its classes writes the line. */
    private static final Logger log = LoggerFactory.getLogger(LockerEngine.class);

    /** How long a close waits for other threads' operations in flight on this locker's claims. */
    static final long CLOSE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(5);

    private final AtomicBoolean closed = new AtomicBoolean();
    /** The locker's name, for messages: its toString. */
    private final Supplier<String> name;
    private final LocalLockMediator mediator;
    /** The lost signal of this locker's holds: it tells them from another locker's in a shared mediator. */
    private final Consumer<Hold> sink;
    private final String rid;
    /** An interrupt that came while close waited; only the one thread that closes touches it. */
    private boolean interruptedWhileClosing;

    Closing(Supplier<String> name, LocalLockMediator mediator, Consumer<Hold> sink, String rid) {
        this.name = name;
        this.mediator = mediator;
        this.sink = sink;
        this.rid = rid;
    }

    /** Marks the locker closed; true for the one call that did it. */
    boolean begin() {
        return closed.compareAndSet(false, true);
    }

    /** The end of close's wait for operations in flight: {@link #CLOSE_WAIT_NANOS} from now, on the system clock. */
    static long waitEnd() {
        return System.nanoTime() + CLOSE_WAIT_NANOS;
    }

    boolean isClosed() {
        return closed.get();
    }

    void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException(name() + " is closed");
        }
    }

    String name() {
        return name.get();
    }

    /**
     * Runs close's steps with the caller's interrupt flag cleared, and sets the flag again after them. A cancelled
     * task or a shutdownNow often closes a locker. Its waits and deletes must still run to their bound, or a step in
     * flight loses its client under it and its claim stays for the whole expiry.
     */
    void uninterrupted(Runnable steps) {
        boolean interrupted = Thread.interrupted();
        try {
            steps.run();
        } finally {
            if (interrupted || interruptedWhileClosing) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Takes the steps lock of {@code hold}, waiting for a step in flight until {@code end} (System.nanoTime). An
     * interrupt meanwhile does not end the wait: close sets the flag again once it is done.
     */
    boolean lockSteps(Hold hold, long end) {
        while (true) {
            try {
                return hold.lockSteps(Math.max(0, end - System.nanoTime()));
            } catch (InterruptedException e) {
                interruptedWhileClosing = true;
            }
        }
    }

    /**
     * Waits until {@code end} (System.nanoTime: a wall-time bound whatever time source the locker runs on), until no
     * mediator entry of this locker is left. Once close released what it could, an
     * entry left is an operation of another thread in flight: a release it finishes (a lease's close or a deleteLocks
     * that started first), or a claim under way that will withdraw on seeing the locker closed. Each removes its entry
     * only after its backend I/O, so waiting for the entries keeps the backend's close from cutting the ground from
     * under them (the claim would stay in the store until it expired). Waits on each hold's steps lock (reentrant: a
     * probe or listener closing the locker from inside a step of its own does not wait for itself).
     */
    void awaitOperationsInFlight(long end) {
        List<Hold> left = new ArrayList<>();
        while (true) {
            left.clear();
            mediator.forEachHold(hold -> {
                if (hold.reportsTo(sink)) {
                    left.add(hold);
                }
            });
            left.removeIf(Hold::stepsHeldByMe); // this thread's own step, closing from inside it
            long now = System.nanoTime();
            if (left.isEmpty() || now - end >= 0) {
                if (!left.isEmpty()) {
                    log.warn("Locker {} closed with {} operation(s) on its claims still in flight after {}: their "
                            + "claims are left to expire ({})", rid, left.size(),
                            Duration.ofNanos(CLOSE_WAIT_NANOS), left.get(0).lock);
                }
                return;
            }
            for (Hold hold : left) {
                if (lockSteps(hold, end)) {
                    hold.unlockSteps(); // a step in flight on it ended
                }
            }
            try {
                Thread.sleep(1); // its entry goes after the step: look again
            } catch (InterruptedException e) {
                interruptedWhileClosing = true;
            }
        }
    }
}
