package dev.locker.testkit;

import dev.locker.api.TimeSource;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A time source that parks the first {@code now()} a forced release asks for after it read the holder, outside the
 * driver's {@code readHolder} and {@code remove} and the hooks they bridge. That is the record's timestamp, taken
 * between the shared read of the holder and the backend's conditional removal. The operator stalls exactly there
 * while other processes act.
 */
final class ForceReleasePause implements TimeSource {
    private final TimeSource real;
    private final Pause pause;
    private final AtomicBoolean fired = new AtomicBoolean();

    ForceReleasePause(TimeSource real, Pause pause) {
        this.real = real;
        this.pause = pause;
    }

    @Override
    public Instant now() {
        if (!fired.get() && betweenReadAndRemoval() && fired.compareAndSet(false, true)) {
            pause.park();
        }
        return real.now();
    }

    private static boolean betweenReadAndRemoval() {
        boolean forcing = false;
        for (StackTraceElement f : Thread.currentThread().getStackTrace()) {
            String m = f.getMethodName();
            if (m.equals("readHolding") || m.equals("readHolder") || m.equals("deleteClaimWithToken")
                    || m.equals("remove")) {
                return false;
            }
            forcing |= m.equals("forceRelease") && f.getClassName().endsWith("LockerEngine");
        }
        return forcing;
    }

    @Override
    public long nanoTime() {
        return real.nanoTime();
    }

    @Override
    public void sleep(Duration d) throws InterruptedException {
        real.sleep(d);
    }
}
