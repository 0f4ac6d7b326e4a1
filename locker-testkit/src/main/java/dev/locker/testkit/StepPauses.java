package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockProbe;

import java.util.Iterator;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A {@link LockProbe} that pauses chosen backend steps of one locker: give it to the locker's configuration, ask for a
 * {@link Pause} at a step (before the backend is asked, or after it answered), and the first thread to reach that
 * point parks there until the test resumes it. Each pause fires once.
 */
public final class StepPauses implements LockProbe {

    private final ConcurrentLinkedQueue<Point> points = new ConcurrentLinkedQueue<>();

    private record Point(Step step, boolean afterBackend, Pause pause) {
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
        points.add(new Point(step, afterBackend, p));
        return p;
    }

    @Override
    public void before(Step step, KeyColumn lock, String rid) {
        park(step, false);
    }

    @Override
    public void after(Step step, KeyColumn lock, String rid, RuntimeException failure) {
        park(step, true);
    }

    private void park(Step step, boolean afterBackend) {
        for (Iterator<Point> it = points.iterator(); it.hasNext(); ) {
            Point p = it.next();
            if (p.step == step && p.afterBackend == afterBackend && points.remove(p)) {
                p.pause.park();
                return;
            }
        }
    }
}
