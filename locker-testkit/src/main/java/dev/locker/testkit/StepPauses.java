package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockProbe;
import dev.locker.api.TemporaryLockingException;

import java.util.Iterator;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A {@link LockProbe} that pauses chosen backend steps of one locker: give it to the locker's configuration, ask for a
 * {@link Pause} at a step (before the backend is asked, or after it answered), and the first thread to reach that
 * point parks there until the test resumes it. Each pause fires once.
 */
public final class StepPauses implements LockProbe {

    private final ConcurrentLinkedQueue<Point> points = new ConcurrentLinkedQueue<>();

    /** Where the locker stops, or with {@code fail}, where its next step's answer is lost. */
    private record Point(Step step, boolean afterBackend, Pause pause, boolean fail) {
    }

    /** Pauses the next {@code step} of this locker before the backend is asked. */
    public Pause before(Step step) {
        return add(step, false);
    }

    /** Pauses the next {@code step} of this locker after the backend answered, before the locker acts on the answer. */
    public Pause after(Step step) {
        return add(step, true);
    }

    private Pause add(Step step, boolean afterBackend) {
        Pause p = new Pause((afterBackend ? "after " : "before ") + step);
        points.add(new Point(step, afterBackend, p, false));
        return p;
    }

    /**
     * Loses the answer of this locker's next {@code step} that the backend carried out: the step fails as a lost reply
     * would make it fail, with its effect in the store.
     */
    public void loseAnswerOf(Step step) {
        points.add(new Point(step, true, null, true));
    }

    @Override
    public void before(Step step, KeyColumn lock, String rid) {
        park(step, false);
    }

    @Override
    public void after(Step step, KeyColumn lock, String rid, RuntimeException failure) {
        Point p = park(step, true);
        if (p != null && p.fail && failure == null) {
            throw new TemporaryLockingException("the answer to " + step + " was lost (a test's fault)", lock);
        }
    }

    private Point park(Step step, boolean afterBackend) {
        for (Iterator<Point> it = points.iterator(); it.hasNext(); ) {
            Point p = it.next();
            if (p.step == step && p.afterBackend == afterBackend && points.remove(p)) {
                if (p.pause != null) {
                    p.pause.park();
                }
                return p;
            }
        }
        return null;
    }
}
