package dev.locker.faults;

import dev.locker.api.LockPage;
import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import dev.locker.testkit.FaultProxy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One run of one {@link Scenario} on one {@link Backend}: starts the worker JVMs, the referee and (where the scenario
 * needs them) one fault proxy per worker, injects the fault ({@link FaultInjector}), stops the workers, looks for
 * claims left behind and judges the merged timeline ({@link Checker}). The timeline and every worker's log are kept
 * in the run's directory.
 */
public final class TortureRun {

    /** Where libfaketime's preload library is on Debian (package {@code libfaketime}). */
    public static final Path LIBFAKETIME = Path.of("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1");

    /** The harness's source name on the timeline. */
    static final String HARNESS = "harness";

    /**
     * The outcome of a run.
     *
     * @param backend        the backend's name
     * @param scenario       the scenario
     * @param run            the run's number
     * @param promisesSafety whether Locker promises mutual exclusion here (see {@link Backend#promisesSafety})
     * @param control        whether the run is a control the checkers must flag (see {@link Backend#isControl})
     * @param faultInjected  whether the fault happened (a run whose moment never came proves nothing)
     * @param verdict        what the checkers found
     * @param expiry         the claims' expiry
     * @param duration       how long the run took, workers' start included
     * @param dir            where its timeline and logs are
     */
    public record Result(String backend, Scenario scenario, int run, boolean promisesSafety, boolean control,
                         boolean faultInjected,
                         Verdict verdict, Duration expiry, Duration duration, Path dir) {
    }

    private final Backend backend;
    private final Scenario scenario;
    private final Profile profile;
    private final int run;
    private final Random random;
    private final Path dir;
    private final Duration expiry;
    private final Timeline timeline = new Timeline();
    private final Map<String, WorkerProcess> workers = new LinkedHashMap<>();
    /** The workers whose JVM a fault acted on, or that run on a faked clock: their JVMs serve no other run. */
    private final Set<String> spent = new HashSet<>();
    private final Map<String, FaultProxy> proxies = new HashMap<>();
    private final Map<String, Path> clockFiles = new HashMap<>();
    private final String prefix;
    private final WorkerJvm launcher;
    private final FaultInjector faults;
    /** Worker JVMs started by this harness, for their names. */
    private static final AtomicInteger JVMS = new AtomicInteger();

    /**
     * Prepares a run.
     *
     * @param backend  the backend, open
     * @param scenario what to inject
     * @param profile  how hard
     * @param run      the run's number (0 for the first)
     * @param root     the directory under which the run keeps its files
     */
    public TortureRun(Backend backend, Scenario scenario, Profile profile, int run, Path root) {
        this.backend = backend;
        this.scenario = scenario;
        this.profile = profile;
        this.run = run;
        this.random = profile.random(backend.name(), scenario, run);
        // a restart outside the promise (MongoDB's test server loses its data) with an expiry that outlasts the server's
        // restart, so that the loss can show: with a short one the holder's own deadline ends first
        this.expiry = scenario == Scenario.SERVER_RESTART && !backend.promisesSafety(scenario)
                ? profile.expiry().multipliedBy(5)
                : scenario == Scenario.MIXED_EXPIRY_RESTART ? RedisBackend.LONG_EXPIRY
                // longer than the failover itself, so that a holder's claim can live through it
                : scenario == Scenario.REDIS_FAILOVER || scenario == Scenario.REDIS_FAILOVER_CLOCK_AHEAD
                        || scenario == Scenario.REDIS_FAILOVER_CLOCK_WITHIN_BOUND
                ? profile.expiry().multipliedBy(3)
                // longer than a restart on a busy machine: the holder must still be valid when the next one is granted
                : scenario == Scenario.CONTROL_NO_GUARD ? profile.expiry().multipliedBy(3)
                // far above a prompt takeover, so that a claim a close left to expire shows in the liveness check
                : scenario == Scenario.FILE_INTERRUPTED_CLOSE ? profile.expiry().multipliedBy(10)
                : profile.expiry();
        this.dir = root.resolve(backend.name()).resolve(scenario.name().toLowerCase() + "-" + run);
        this.prefix = "f" + Long.toHexString(System.nanoTime() & 0xffffffL) + scenario.ordinal() + "-";
        this.launcher = WorkerJvm.in(root.resolve("worker-jvm"));
        this.faults = new FaultInjector(backend, scenario, profile, random, expiry, timeline, workers, spent, proxies,
                clockFiles);
    }

    /**
     * Whether this machine can run the scenario at all (libfaketime for the clock scenarios, gcc for the shim that
     * shifts a Redis server's clock).
     *
     * @param scenario the scenario
     * @return the reason it cannot, or null
     */
    public static String unavailable(Scenario scenario) {
        if ((scenario == Scenario.CLOCK_SKEW || scenario == Scenario.CLOCK_JUMP) && !Files.exists(LIBFAKETIME)) {
            return "libfaketime is not installed (" + LIBFAKETIME + "; Debian package libfaketime)";
        }
        if (scenario == Scenario.REDIS_FAILOVER_CLOCK_AHEAD || scenario == Scenario.REDIS_FAILOVER_CLOCK_WITHIN_BOUND) {
            return ClockShift.unavailable();
        }
        return null;
    }

    /**
     * Runs it.
     *
     * @return what happened
     * @throws InterruptedException when interrupted
     */
    public Result execute() throws InterruptedException {
        long t0 = System.nanoTime();
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        boolean injected;
        int leftovers;
        backend.begin(scenario, expiry);
        try (Referee referee = new Referee(timeline)) {
            if (scenario == Scenario.REGION_SERVER_ABORT) {
                ((HBaseBackend) backend).prepareRegionServerAbort();
            }
            trainWorkerJvm();
            timeline.note(HARNESS, Event.Type.NOTE, "-", "starting workers");
            startWorkers(referee.port());
            awaitAll(Event.Type.READY, Duration.ofSeconds(120));
            for (WorkerProcess w : workers.values()) {
                w.send("GO " + (System.nanoTime() + Duration.ofMinutes(10).toNanos()));
            }
            timeline.note(HARNESS, Event.Type.NOTE, "-", "GO: " + scenario + " on " + backend.name() + ", expiry "
                    + expiry.toMillis() + " ms, seed " + profile.seed() + ", run " + run);
            injected = faults.inject();
            timeline.note(HARNESS, Event.Type.NOTE, "-", "STOP");
            stopWorkers();
            timeline.note(HARNESS, Event.Type.NOTE, "-", "workers exited");
            leftovers = leftovers();
            timeline.note(HARNESS, Event.Type.NOTE, "-", "claims left behind: " + leftovers);
        } finally {
            WorkerPool pool = WorkerPool.of(backend.name());
            for (Map.Entry<String, WorkerProcess> w : workers.entrySet()) {
                Process p = w.getValue().process();
                if (!spent.contains(w.getKey()) && w.getValue().isIdle()) {
                    pool.offer(w.getValue());
                } else if (p.isAlive()) {
                    try {
                        Signals.cont(p.pid());
                    } catch (RuntimeException ignored) {
                        // it may have exited meanwhile
                    }
                    p.destroyForcibly();
                }
            }
            proxies.values().forEach(FaultProxy::close);
            backend.end();
            timeline.write(dir.resolve("timeline.tsv"));
        }
        Checker checker = new Checker(expiry, Duration.ZERO, profile.slack());
        Verdict verdict = checker.check(timeline.events(), leftovers);
        return new Result(backend.name(), scenario, run, backend.promisesSafety(scenario), backend.isControl(scenario),
                injected, verdict, expiry,
                Duration.ofNanos(System.nanoTime() - t0), dir);
    }

    // ---- workers ----

    private record Plan(int workers, String locks, long holdMs, int writes, long waitMs, long gapMs, long releasePauseMs,
                        boolean keepAlive, long cycles) {
    }

    private Plan plan() {
        long e = expiry.toMillis();
        return switch (scenario) {
            case CONTENTION -> new Plan(4, "L0,L1", 0, 1, 10_000, 0, 0, true, profile.contentionCycles());
            case KILL_RELEASING -> new Plan(3, "L0", e / 4, 2, 3 * e + 2000, 20, 300, true, Long.MAX_VALUE);
            case CONTROL_NO_GUARD -> new Plan(3, "L0", 3 * e, 30, 3 * e + 2000, 20, 0, false, Long.MAX_VALUE);
            // holds longer than the expiry: the holder's keep-alive must carry it across the fault, or it must learn
            case STOP_HOLDER, FREEZE_CONNECTION, SERVER_RESTART, SERVER_RESTART_AOF, SERVER_PAUSE,
                    REGION_SERVER_ABORT -> new Plan(3, "L0", 2 * e, 10, 3 * e + 2000, 20, 0, true, Long.MAX_VALUE);
            // e is 3 x the profile's expiry here: a hold as long as it still spans the failover
            case REDIS_FAILOVER -> new Plan(3, "L0", e, 6, 3 * e + 2000, 20, 0, true, Long.MAX_VALUE);
            // no renewal, which would hide a clock ahead: the holder writes on to the end of its own validity
            case REDIS_FAILOVER_CLOCK_AHEAD, REDIS_FAILOVER_CLOCK_WITHIN_BOUND ->
                    new Plan(3, "L0", e, 6, 3 * e + 2000, 20, 0, false, Long.MAX_VALUE);
            // two workers of each expiry; e is the long one, and every hold outlasts the short expiry
            case MIXED_EXPIRY_RESTART -> new Plan(4, "L0", 1500, 10, 2 * e + 2000, 20, 0, true, Long.MAX_VALUE);
            // 4 workers on one lock: someone waits on it whenever the slot moves
            case REDIS_SLOT_MIGRATION -> new Plan(4, "L0", 300, 3, 3 * e + 2000, 20, 0, true, Long.MAX_VALUE);
            case FILE_INTERRUPTED_CLOSE -> new Plan(3, "L0", 500, 2, 2 * e, 20, 0, true, Long.MAX_VALUE);
            // the same, with a gap between a worker's release and its next acquire longer than a waiter's poll: the
            // second jump needs a second holder, and where nothing wakes waiters (file:) a releaser that asked again
            // 20 ms later kept the lock for 30 s in one run (18 grants in a row: "the fault was never injected")
            case CLOCK_JUMP -> new Plan(3, "L0", 2 * e, 10, 3 * e + 2000, Math.max(500, e / 2), 0, true,
                    Long.MAX_VALUE);
            default -> new Plan(3, "L0", e / 2, 4, 3 * e + 2000, 20, 0, true, Long.MAX_VALUE);
        };
    }

    private void startWorkers(int refereePort) {
        Plan plan = plan();
        String locks = String.join(",", Arrays.stream(plan.locks().split(",")).map(l -> prefix + l).toList());
        long skew = Math.max(90, 3 * expiry.toSeconds());
        WorkerPool pool = WorkerPool.of(backend.name());
        for (int i = 0; i < plan.workers(); i++) {
            String id = "w" + i;
            String hostPort = backend.serverAddress();
            if (scenario == Scenario.FREEZE_CONNECTION) {
                String[] hp = hostPort.split(":");
                FaultProxy proxy = new FaultProxy(hp[0], Integer.parseInt(hp[1]));
                proxies.put(id, proxy);
                hostPort = "127.0.0.1:" + proxy.port();
            }
            List<String> args = List.of(
                    "--id=" + id, "--uri=" + backend.uri(i, hostPort), "--locks=" + locks, "--referee=" + refereePort,
                    "--cycles=" + plan.cycles(), "--holdMs=" + plan.holdMs(), "--writes=" + plan.writes(),
                    "--waitMs=" + plan.waitMs(), "--gapMs=" + plan.gapMs(), "--releasePauseMs=" + plan.releasePauseMs(),
                    "--keepAlive=" + plan.keepAlive(), "--seed=" + random.nextLong(),
                    "--closeInterruptedAndQuit=" + (scenario == Scenario.FILE_INTERRUPTED_CLOSE && i == 0));
            Map<String, String> fakedTime = null;
            if (scenario == Scenario.CLOCK_SKEW && i < 2) {
                fakedTime = fakeTime(null);
                fakedTime.put("FAKETIME", (i == 0 ? "-" : "+") + skew + "s");
            } else if (scenario == Scenario.CLOCK_JUMP) {
                Path file = dir.resolve(id + ".faketime");
                FaultInjector.writeClock(file, "+0s");
                clockFiles.put(id, file);
                fakedTime = fakeTime(file);
            }
            // a faked clock is set in the environment at the JVM's start, so such a worker needs a JVM of its own
            WorkerProcess w = fakedTime == null ? pool.take() : null;
            if (w == null) {
                w = startWorkerJvm(fakedTime);
            }
            if (fakedTime != null) {
                spent.add(id);
            }
            workers.put(id, w);
            w.serve(id, timeline, dir, args);
        }
        if (scenario == Scenario.CLOCK_SKEW) {
            timeline.note(HARNESS, Event.Type.FAULT, "-", "CLOCK w0 -" + skew + "s, w1 +" + skew + "s (from start)");
        }
    }

    private WorkerProcess startWorkerJvm(Map<String, String> fakedTime) {
        String name = backend.name() + "-" + JVMS.incrementAndGet();
        Path jvmDir = launcher.dir();
        Path log = jvmDir.resolve(name + ".log");
        List<String> options = new ArrayList<>(backend.workerJvmOptions());
        options.add("-Dfaults.log=" + log);
        ProcessBuilder pb = new ProcessBuilder(launcher.command(backend.name(), options, List.of("--serve")));
        if (fakedTime != null) {
            pb.environment().putAll(fakedTime);
        }
        return WorkerProcess.start(pb, name, log, jvmDir.resolve(name + ".stderr"));
    }

    private List<String> jvmOptions(String id) {
        List<String> options = new ArrayList<>(backend.workerJvmOptions());
        options.add("-Dfaults.log=" + dir.resolve(id + ".log"));
        return options;
    }

    /**
     * Before a backend's first run, a worker of its own cycles a few times on a lock outside this run's prefix.
     * Its referee and timeline are its own too, so the run's checkers never see it.
     */
    private void trainWorkerJvm() throws InterruptedException {
        String hostPort = backend.serverAddress();
        try (Referee referee = new Referee(new Timeline())) {
            launcher.train(backend.name(), jvmOptions("training"), List.of("--id=training",
                    "--uri=" + backend.uri(0, hostPort), "--locks=training-" + prefix + "L0",
                    "--referee=" + referee.port(), "--cycles=3", "--holdMs=0", "--writes=1", "--waitMs=10000",
                    "--gapMs=0", "--releasePauseMs=0", "--keepAlive=true", "--seed=1",
                    "--closeInterruptedAndQuit=false"));
        }
    }

    private static Map<String, String> fakeTime(Path timestampFile) {
        Map<String, String> env = new HashMap<>();
        env.put("LD_PRELOAD", LIBFAKETIME.toString());
        // the monotonic clock must stay real: it is the shared timeline, and JVM timed waits spin on a faked one
        env.put("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        env.put("FAKETIME_FORCE_MONOTONIC_FIX", "0");
        if (timestampFile != null) {
            env.put("FAKETIME_TIMESTAMP_FILE", timestampFile.toString());
            env.put("FAKETIME_NO_CACHE", "1");
        }
        return env;
    }

    private void awaitAll(Event.Type type, Duration max) throws InterruptedException {
        long deadline = System.nanoTime() + max.toNanos();
        for (String id : workers.keySet()) {
            Optional<Event> e = Optional.empty();
            // in slices, so that a worker that died at start ends the wait at once instead of after max
            while (e.isEmpty() && workers.get(id).process().isAlive()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                e = timeline.await(0, ev -> ev.source().equals(id) && ev.type() == type,
                        Duration.ofNanos(Math.min(left, Duration.ofMillis(200).toNanos())));
            }
            if (e.isEmpty()) {
                e = timeline.await(0, ev -> ev.source().equals(id) && ev.type() == type, Duration.ZERO);
            }
            if (e.isEmpty()) {
                throw new IllegalStateException("worker " + id + " did not report " + type + " within " + max
                        + " (alive: " + workers.get(id).process().isAlive() + "); see " + dir);
            }
        }
    }

    private void stopWorkers() throws InterruptedException {
        for (WorkerProcess w : workers.values()) {
            w.send("STOP");
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        for (Map.Entry<String, WorkerProcess> w : workers.entrySet()) {
            long left = Math.max(0, deadline - System.nanoTime());
            if (!w.getValue().awaitRunEnd(Duration.ofNanos(left))) {
                timeline.note(HARNESS, Event.Type.NOTE, w.getKey(), "did not exit after STOP: killed");
                w.getValue().process().destroyForcibly().waitFor();
            }
        }
        Thread.sleep(50); // the readers drain the last lines
    }

    // ---- claims left behind ----

    private int leftovers() throws InterruptedException {
        String address = backend.serverAddress();
        try (Locker locker = Lockers.open(backend.uri(address == null ? "" : address))) {
            long deadline = System.nanoTime() + expiry.plus(profile.slack()).toNanos();
            int held = -1;
            while (true) {
                try {
                    LockPage page = locker.list(prefix, 100, null);
                    held = page.locks().size();
                    if (held == 0 && page.nextCursor().isEmpty()) {
                        return 0;
                    }
                } catch (RuntimeException e) {
                    timeline.note(HARNESS, Event.Type.NOTE, "-", "listing failed: " + e);
                }
                if (System.nanoTime() - deadline > 0) {
                    timeline.note(HARNESS, Event.Type.NOTE, "-", "claims left behind: " + held);
                    return Math.max(held, 1);
                }
                Thread.sleep(100);
            }
        }
    }
}
