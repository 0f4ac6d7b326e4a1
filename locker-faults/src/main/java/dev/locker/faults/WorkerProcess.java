package dev.locker.faults;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A worker JVM started with {@code --serve} (see {@link Worker}): it serves one run at a time, each as a new worker.
 *
 * <p>The harness reads the JVM's standard output for its whole life.
 * Event lines go to the timeline of the run it serves; other lines go to that run's {@code <id>.stdout}.
 * The line {@code IDLE} ends a run cleanly; {@code UNFIT} ends it and the JVM exits.
 * Its log and standard error belong to the JVM, not to a run: each run's {@code .stdout} names them.
 */
final class WorkerProcess {

    /** The run a JVM serves: its worker id, its timeline and the file for its other output. */
    private record Route(String id, Timeline timeline, BufferedWriter other) {
    }

    private final Process process;
    private final String name;
    private final Path log;
    private final Path stderr;
    private Route route;
    private boolean idle = true;
    private int runs;

    private WorkerProcess(Process process, String name, Path log, Path stderr) {
        this.process = process;
        this.name = name;
        this.log = log;
        this.stderr = stderr;
    }

    /**
     * Starts a worker JVM that serves runs, with its standard error in {@code stderr}.
     *
     * @param pb     the command, with {@code --serve} and its environment
     * @param name   a name for the JVM, unique in the harness
     * @param log    the file the JVM logs to (named in its command)
     * @param stderr where its standard error goes
     * @return the JVM, waiting for its first run
     */
    static WorkerProcess start(ProcessBuilder pb, String name, Path log, Path stderr) {
        try {
            WorkerProcess w = new WorkerProcess(pb.redirectError(stderr.toFile()).start(), name, log, stderr);
            Thread t = new Thread(w::readOutput, "events-" + name);
            t.setDaemon(true);
            t.start();
            return w;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start worker JVM " + name, e);
        }
    }

    /** The JVM's process, for the faults (SIGKILL, SIGSTOP). */
    Process process() {
        return process;
    }

    /**
     * Hands the JVM one run: its events go to {@code timeline} from now on.
     *
     * @param id       the worker's id in the run
     * @param timeline the run's timeline
     * @param dir      the run's directory, for {@code <id>.stdout}
     * @param args     the worker's {@code --name=value} arguments
     */
    void serve(String id, Timeline timeline, Path dir, List<String> args) {
        BufferedWriter other;
        try {
            other = Files.newBufferedWriter(dir.resolve(id + ".stdout"), StandardCharsets.UTF_8);
            synchronized (this) {
                runs++;
                other.write("worker JVM " + name + " (pid " + process.pid() + "), its run " + runs + "; log " + log
                        + ", stderr " + stderr);
                other.newLine();
                other.flush();
                route = new Route(id, timeline, other);
                idle = false;
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the output of worker " + id, e);
        }
        send("RUN\t" + String.join("\t", args));
    }

    /**
     * Sends one line to the JVM's standard input; a JVM that is gone (killed) cannot be told anything.
     *
     * @param line the line
     */
    void send(String line) {
        try {
            OutputStream out = process.getOutputStream();
            out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
        } catch (IOException e) {
            // the worker is gone (killed): nothing to tell it
        }
    }

    /**
     * Waits until the run ended: the JVM said {@code IDLE} or exited.
     *
     * @param max how long to wait
     * @return whether it ended in time
     * @throws InterruptedException when interrupted
     */
    synchronized boolean awaitRunEnd(Duration max) throws InterruptedException {
        long deadline = System.nanoTime() + max.toNanos();
        while (!idle && process.isAlive()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            // in slices: an exit shows only through isAlive
            wait(Math.max(1, Math.min(100, left / 1_000_000)));
        }
        return true;
    }

    /**
     * Whether the JVM may serve another run: it is alive and said {@code IDLE} after its last one.
     *
     * @return true when it waits for a run
     */
    synchronized boolean isIdle() {
        return idle && process.isAlive();
    }

    private void readOutput() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                Route r;
                synchronized (this) {
                    r = route;
                }
                if (r == null) {
                    continue;
                }
                if (Event.isEvent(line)) {
                    r.timeline().add(Event.parse(line));
                } else if (line.equals("IDLE")) {
                    endRun(true);
                } else {
                    r.other().write(line);
                    r.other().newLine();
                    if (line.startsWith("UNFIT ")) {
                        endRun(false);
                    }
                }
            }
        } catch (IOException ignored) {
            // the worker is gone
        }
        endRun(false);
    }

    private synchronized void endRun(boolean cleanly) {
        if (route != null) {
            try {
                route.other().close();
            } catch (IOException ignored) {
                // the run's output file is only for reading by people
            }
            route = null;
        }
        idle = cleanly;
        notifyAll();
    }
}
