package dev.locker.cli;

import java.util.concurrent.TimeUnit;

/**
 * A progress line on stderr for a step that takes longer than a second: nothing for a quick step; after a second,
 * {@code locker: <what>... (N s) <detail>}, rewritten in place every quarter second on a terminal, else one line at
 * once and one every five seconds. Closing it stops and clears it.
 */
final class StatusLine implements AutoCloseable {

    private static final long QUIET_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final Terminal terminal;
    private final String what;
    private final long started = System.nanoTime();
    private final Thread ticker;
    private volatile String detail = "";
    private volatile boolean closed;
    private boolean shown;

    StatusLine(Terminal terminal, String what) {
        this.terminal = terminal;
        this.what = what;
        this.ticker = new Thread(this::tick, "locker-cli-status");
        this.ticker.setDaemon(true);
        this.ticker.start();
    }

    /** What the step is at now (pages read, the check being run...). */
    void update(String now) {
        this.detail = now == null ? "" : now;
    }

    private void tick() {
        long lastPrinted = 0;
        try {
            Thread.sleep(TimeUnit.NANOSECONDS.toMillis(QUIET_NANOS));
            while (!closed) {
                long elapsed = System.nanoTime() - started;
                long every = terminal.interactive() ? 0 : TimeUnit.SECONDS.toNanos(5);
                if (!shown || elapsed - lastPrinted >= every) {
                    synchronized (this) {
                        if (closed) {
                            return;
                        }
                        terminal.status("locker: " + what + "... (" + TimeUnit.NANOSECONDS.toSeconds(elapsed) + " s)"
                                + (detail.isEmpty() ? "" : " " + detail), false);
                        shown = true;
                    }
                    lastPrinted = elapsed;
                }
                Thread.sleep(250);
            }
        } catch (InterruptedException stop) {
            // closed
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            if (shown) {
                terminal.clearStatus();
            }
        }
        ticker.interrupt();
    }
}
