package dev.locker.examples;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Real processes, one lock: N worker JVMs ({@link MigrationWorker}) start at once to run a one-time "migration" with
 * {@code runOnce} on the backend named by the first argument (default: {@code file:} in a fresh temporary directory,
 * the embedded cross-process backend). This coordinator watches them and prints a timeline:
 * <ol>
 *   <li>exactly one worker runs the migration; the others say who holds it and serve traffic meanwhile;</li>
 *   <li>the coordinator kills that holder with SIGKILL mid-run; another worker takes the migration over;</li>
 *   <li>the coordinator stops the second holder ({@code kill -STOP}) past its expiry; a third worker takes over
 *       once the claim expired; the stopped one is continued ({@code kill -CONT}) and its next write, carrying its
 *       older fencing token, is refused by the target;</li>
 *   <li>the migration is recorded exactly once; everyone exits.</li>
 * </ol>
 * Arguments: {@code [uri] [workers]} (default 4 workers). Exits with status 1 when an outcome is not as expected.
 */
public final class ProcessDemo {

    /** Claims' expiry in the demo: how long a stopped holder keeps the lock (a killed one loses it sooner on file:). */
    static final Duration EXPIRY = Duration.ofSeconds(3);

    private ProcessDemo() {
    }

    public static void main(String[] args) throws Exception {
        String uri = args.length > 0 && !args[0].isBlank() ? args[0] : null;
        int workers = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        Outcome o = run(uri, workers, System.out);
        System.out.flush();
        System.exit(o.asExpected() ? 0 : 1); // done: no backend driver thread may hold the JVM (or mvn exec:java) open
    }

    /** What the demo showed. */
    record Outcome(int ran, int recordedRuns, boolean killedTakenOver, boolean staleWriteRefused, boolean allExited,
                   List<String> timeline) {
        boolean asExpected() {
            return ran == 1 && recordedRuns == 1 && killedTakenOver && staleWriteRefused && allExited;
        }
    }

    private record Event(long at, String worker, String kind, String text) {
    }

    /** Timeline lines from several processes, held back briefly and printed in the order they happened. */
    private static final class Timeline {
        private final PrintStream out;
        private final long t0;
        private final java.util.PriorityQueue<long[]> order = new java.util.PriorityQueue<>(
                java.util.Comparator.<long[]>comparingLong(a -> a[0]).thenComparingLong(a -> a[1]));
        private final List<String> texts = new ArrayList<>();

        Timeline(PrintStream out, long t0) {
            this.out = out;
            this.t0 = t0;
        }

        void add(long at, String who, String text) {
            texts.add(String.format("%s  %-11s  %s", stamp(t0, at), who, text));
            order.add(new long[] {at, texts.size() - 1});
        }

        void flush(long upTo) {
            while (!order.isEmpty() && order.peek()[0] <= upTo) {
                out.println(texts.get((int) order.poll()[1]));
            }
        }
    }

    /** Runs the demo; {@code uri} null: {@code file:} in a new temporary directory. */
    static Outcome run(String uri, int workers, PrintStream out) throws IOException, InterruptedException {
        if (workers < 3) {
            throw new IllegalArgumentException("the demo needs at least 3 workers (a killed, a stopped, a finishing one)");
        }
        Path work = Files.createTempDirectory("locker-demo-");
        String backend = uri != null ? uri : "file:" + work.resolve("locks");
        Path targetFile = work.resolve("migration-target.log");
        long t0 = System.currentTimeMillis();
        List<String> timeline = new ArrayList<>();
        PrintStream tl = new PrintStream(new java.io.OutputStream() {
            private final StringBuilder line = new StringBuilder();

            @Override
            public void write(int b) {
                out.write(b);
                if (b == '\n') {
                    timeline.add(line.toString());
                    line.setLength(0);
                } else {
                    line.append((char) b);
                }
            }
        }, true, StandardCharsets.UTF_8);

        Timeline line = new Timeline(tl, t0);
        tl.printf("Locker process demo: %d worker JVMs run a one-time migration on %s%n", workers, dev.locker.api.Lockers.redact(backend));
        tl.printf("  (expiry %d s; the migration writes %d steps to %s, which refuses a token below one it saw)%n%n",
                EXPIRY.toSeconds(), MigrationWorker.STEPS, targetFile);

        BlockingQueue<Event> events = new LinkedBlockingQueue<>();
        Map<String, Process> procs = new LinkedHashMap<>();
        String classpath = classpath();
        String javaCommand = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        for (int i = 1; i <= workers; i++) {
            String name = "worker-" + i;
            ProcessBuilder pb = new ProcessBuilder(javaCommand, "-cp", classpath, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                    MigrationWorker.class.getName(), name, backend, targetFile.toString(), EXPIRY.toString())
                    .redirectError(work.resolve(name + ".log").toFile());
            Process p = pb.start();
            procs.put(name, p);
            read(name, p, events);
        }
        line.add(System.currentTimeMillis(), "coordinator", String.format("started %s (pids %s)",
                String.join(", ", procs.keySet()),
                procs.values().stream().map(p -> String.valueOf(p.pid())).collect(Collectors.joining(", "))));

        boolean canPause = !System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).startsWith("windows");
        String first = null;
        String second = null;
        String stopped = null;
        boolean third = false;
        boolean continued = false;
        Long killedAt = null;
        Long takenOverAt = null;
        long stoppedAt = 0;
        int ran = 0;
        boolean refused = false;
        Set<String> finished = new LinkedHashSet<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(55);
        while (finished.size() < workers && System.nanoTime() - deadline < 0) {
            Event e = events.poll(50, TimeUnit.MILLISECONDS);
            line.flush(System.currentTimeMillis() - 150);
            if (stopped != null && !continued && !third
                    && System.nanoTime() - stoppedAt > EXPIRY.plusSeconds(3).toNanos()) {
                // stopped inside a lock-file operation (a renewal), it holds that lock's stripe: nobody can take the
                // lock over until it runs again. Let it finish the operation and pause it again at its next step.
                signal("CONT", procs.get(stopped));
                line.add(System.currentTimeMillis(), "coordinator", "kill -CONT " + stopped + ": it was stopped inside a "
                        + "lock-file operation, which holds the lock's stripe; it is paused again at its next step");
                stopped = null;
            }
            if (e == null) {
                continue;
            }
            if (e.kind.equals("EXIT")) {
                finished.add(e.worker);
                if (!e.text.equals("killed")) {
                    line.add(e.at, e.worker, "exited (status " + e.text + ")");
                }
                continue;
            }
            line.add(e.at, e.worker, e.text);
            switch (e.kind) {
                case "MIGRATING":
                    if (first != null && second != null) {
                        third = true;
                    }
                    if (first == null) {
                        first = e.worker;
                    } else if (second == null) {
                        second = e.worker;
                        takenOverAt = e.at;
                        if (killedAt != null) {
                            line.add(e.at, "coordinator", String.format("-> the killed holder was taken over %.2f s "
                                    + "after the SIGKILL", (e.at - killedAt) / 1000.0));
                        }
                    }
                    break;
                case "STEP":
                    if (e.worker.equals(first) && e.text.startsWith("step 2/") && killedAt == null) {
                        Process p = procs.get(first);
                        p.destroyForcibly();
                        killedAt = System.currentTimeMillis();
                        line.add(killedAt, "coordinator", "SIGKILL " + first + " (pid " + p.pid()
                                + ") in the middle of its migration");
                    } else if (e.worker.equals(second) && !e.text.startsWith("step 1/") && stopped == null && canPause
                            && !continued) {
                        signal("STOP", procs.get(second));
                        stopped = second;
                        stoppedAt = System.nanoTime();
                        line.add(System.currentTimeMillis(), "coordinator", "kill -STOP " + second + " (pid "
                                + procs.get(second).pid() + "): paused past its " + EXPIRY.toSeconds()
                                + " s expiry, as a long GC would");
                    } else if (stopped != null && !continued && !e.worker.equals(stopped)) {
                        signal("CONT", procs.get(stopped));
                        continued = true;
                        line.add(System.currentTimeMillis(), "coordinator", "kill -CONT " + stopped
                                + ": it resumes, still believing in its token");
                    }
                    break;
                case "RAN":
                    ran++;
                    break;
                case "REFUSED":
                    refused = true;
                    break;
                default:
                    break;
            }
        }
        for (Process p : procs.values()) {
            if (p.isAlive()) {
                signal("CONT", p);
                p.destroyForcibly();
            }
        }
        line.flush(Long.MAX_VALUE);
        boolean allExited = finished.size() == workers;
        List<String> written = new FencedTarget(targetFile).lines();
        int recorded = recordedRuns(backend);
        tl.println();
        tl.println("What happened:");
        tl.printf("  %-44s %s%n", "workers that ran the migration to the end:", ran == 1 ? "1 (exactly once)" : ran + " (WRONG)");
        tl.printf("  %-44s %s%n", "runs recorded for the job:", recorded < 0 ? "(not readable)" : recorded);
        tl.printf("  %-44s %s%n", "killed holder taken over:", killedAt != null && takenOverAt != null
                ? String.format("yes, %.2f s after the SIGKILL", (takenOverAt - killedAt) / 1000.0) : "NO");
        tl.printf("  %-44s %s%n", "paused holder's stale write:", refused ? "refused by its fencing token"
                : canPause ? "NOT refused" : "not shown (no kill -STOP on this OS)");
        tl.printf("  %-44s %s%n", "every worker exited:", allExited ? "yes" : "NO");
        tl.printf("  %-44s %d writes, tokens %s%n", "the target accepted:", written.size(),
                written.stream().map(l -> l.substring(0, l.indexOf(' '))).distinct().collect(Collectors.joining(" < ")));
        if (uri == null) {
            tl.printf("  lock directory (ls it): %s%n", work.resolve("locks"));
        }
        tl.printf("  worker logs: %s%n", work);
        return new Outcome(ran, recorded, killedAt != null && takenOverAt != null,
                refused || !canPause, allExited, timeline);
    }

    /**
     * The number of run records for the job (0 or 1 with runOnce), read through a locker of this process with the
     * workers' expiry; -1 when the backend would not say within a few seconds.
     */
    private static int recordedRuns(String backend) {
        long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        try (dev.locker.api.Locker l = dev.locker.api.Lockers.open(backend,
                dev.locker.api.LockerConfig.builder().rid("coordinator").expiry(EXPIRY).build())) {
            while (true) {
                dev.locker.api.Run r = l.runOnce(MigrationWorker.JOB, "check", lease -> {
                    throw new IllegalStateException("the migration was not recorded: it would run again");
                });
                switch (r.outcome()) {
                    case ALREADY_DONE:
                        return 1;
                    case FAILED:
                        return 0;
                    default:
                        if (System.nanoTime() - giveUp > 0) {
                            return -1;
                        }
                        Thread.sleep(300);
                }
            }
        } catch (RuntimeException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    private static void read(String name, Process p, BlockingQueue<Event> events) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = r.readLine(); line != null; line = r.readLine()) {
                    String[] f = line.split("\\|", 4);
                    if (f.length == 4 && f[0].equals("EV")) {
                        events.add(new Event(Long.parseLong(f[1]), name, f[2], f[3]));
                    }
                }
            } catch (IOException | RuntimeException e) {
                // the stream ends with the process (a SIGKILL closes it under us)
            }
            try {
                int status = p.waitFor();
                events.add(new Event(System.currentTimeMillis(), name, "EXIT", status == 137 || status == 9 ? "killed"
                        : String.valueOf(status)));
            } catch (InterruptedException e) {
                events.add(new Event(System.currentTimeMillis(), name, "EXIT", "unknown (interrupted)"));
            }
        }, "demo-read-" + name);
        t.setDaemon(true);
        t.start();
    }

    private static void signal(String sig, Process p) {
        try {
            new ProcessBuilder("kill", "-" + sig, String.valueOf(p.pid())).inheritIO().start().waitFor();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String stamp(long t0, long at) {
        return String.format("+%6.2fs", (at - t0) / 1000.0);
    }

    /**
     * The classpath of this demo, for the workers: the URLs of the class loader that loaded it (under
     * {@code mvn exec:java} the project's runtime classpath), else {@code java.class.path}.
     */
    static String classpath() {
        ClassLoader cl = ProcessDemo.class.getClassLoader();
        if (cl instanceof URLClassLoader) {
            List<String> parts = new ArrayList<>();
            for (URL u : ((URLClassLoader) cl).getURLs()) {
                try {
                    parts.add(Path.of(u.toURI()).toString());
                } catch (URISyntaxException | IllegalArgumentException e) {
                    // not a file: skip
                }
            }
            if (!parts.isEmpty()) {
                return String.join(java.io.File.pathSeparator, parts);
            }
        }
        return System.getProperty("java.class.path");
    }
}
