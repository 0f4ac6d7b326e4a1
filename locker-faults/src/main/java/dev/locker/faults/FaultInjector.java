package dev.locker.faults;

import dev.locker.testkit.FaultProxy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Predicate;

import static dev.locker.faults.TortureRun.HARNESS;

/**
 * The fault of one {@link TortureRun}: waits for the moment its {@link Scenario} names, injects the fault, notes it on
 * the timeline, then waits for the cut holder's lock to be granted again. It says whether the moment came.
 */
final class FaultInjector {

    private final Backend backend;
    private final Scenario scenario;
    private final Profile profile;
    private final Random random;
    private final Duration expiry;
    private final Timeline timeline;
    private final Map<String, WorkerProcess> workers;
    private final Set<String> spent;
    private final Map<String, FaultProxy> proxies;
    private final Map<String, Path> clockFiles;

    /**
     * @param backend    the backend, open
     * @param scenario   what to inject
     * @param profile    how hard
     * @param random     the run's random source, shared with the workers' seeds
     * @param expiry     the claims' expiry
     * @param timeline   the run's timeline
     * @param workers    the run's worker JVMs by id, filled once they start
     * @param spent      where it adds each worker whose JVM the fault acts on (no later run gets that JVM)
     * @param proxies    the fault proxy of each worker, where the scenario has them
     * @param clockFiles the faked clock file of each worker, where the scenario has them
     */
    FaultInjector(Backend backend, Scenario scenario, Profile profile, Random random, Duration expiry,
                  Timeline timeline, Map<String, WorkerProcess> workers, Set<String> spent,
                  Map<String, FaultProxy> proxies,
                  Map<String, Path> clockFiles) {
        this.backend = backend;
        this.scenario = scenario;
        this.profile = profile;
        this.random = random;
        this.expiry = expiry;
        this.timeline = timeline;
        this.workers = workers;
        this.spent = spent;
        this.proxies = proxies;
        this.clockFiles = clockFiles;
    }

    /**
     * Injects the scenario's fault once its moment came, then waits for its consequences to show.
     *
     * @return whether the fault was injected
     * @throws InterruptedException when interrupted
     */
    boolean inject() throws InterruptedException {
        Duration twice = expiry.multipliedBy(2);
        Cut cut = null;
        switch (scenario) {
            case KILL_HOLDING -> {
                Optional<Event> g = awaitAfterWarmUp(e -> e.type() == Event.Type.GRANTED);
                if (g.isEmpty()) {
                    return false;
                }
                kill(g.get().source());
                cut = new Cut(g.get().lock(), g.get().source(), System.nanoTime());
            }
            case KILL_WAITING -> {
                Optional<String> waiter = awaitWaiter();
                if (waiter.isEmpty()) {
                    return false;
                }
                kill(waiter.get());
            }
            case KILL_RELEASING -> {
                Optional<Event> r = awaitAfterWarmUp(e -> e.type() == Event.Type.RELEASE_STEP);
                if (r.isEmpty()) {
                    return false;
                }
                Thread.sleep(profile.randomTiming() ? random.nextInt(150) : 50); // inside the 300 ms release step
                kill(r.get().source());
                cut = new Cut(r.get().lock(), r.get().source(), System.nanoTime());
            }
            case STOP_HOLDER -> {
                cut = cutOffHolder("STOP", w -> Signals.stop(workers.get(w).process().pid()),
                        "CONT", w -> Signals.cont(workers.get(w).process().pid())).orElse(null);
                if (cut == null) {
                    return false;
                }
            }
            case FREEZE_CONNECTION -> {
                cut = cutOffHolder("FREEZE", w -> proxies.get(w).freeze(), "THAW", w -> proxies.get(w).thaw())
                        .orElse(null);
                if (cut == null) {
                    return false;
                }
            }
            case SERVER_RESTART, SERVER_RESTART_AOF, CONTROL_NO_GUARD -> {
                Optional<Event> g = awaitAfterWarmUp(e -> e.type() == Event.Type.GRANTED);
                if (g.isEmpty()) {
                    return false;
                }
                timeline.note(HARNESS, Event.Type.FAULT, g.get().lock(), "SERVER_KILL (holder " + g.get().source() + ")");
                backend.killServer();
                backend.startServer();
                timeline.note(HARNESS, Event.Type.FAULT, g.get().lock(), "SERVER_START");
            }
            case SERVER_PAUSE -> {
                Optional<Event> g = awaitAfterWarmUp(e -> e.type() == Event.Type.GRANTED);
                if (g.isEmpty()) {
                    return false;
                }
                timeline.note(HARNESS, Event.Type.FAULT, g.get().lock(), "SERVER_PAUSE (holder " + g.get().source() + ")");
                backend.pauseServer();
                Thread.sleep(twice.toMillis());
                backend.resumeServer();
                timeline.note(HARNESS, Event.Type.FAULT, g.get().lock(), "SERVER_RESUME");
            }
            case REDIS_FAILOVER, REDIS_FAILOVER_CLOCK_AHEAD, REDIS_FAILOVER_CLOCK_WITHIN_BOUND -> {
                Optional<Event> g = awaitAfterWarmUp(e -> e.type() == Event.Type.GRANTED);
                if (g.isEmpty()) {
                    return false;
                }
                RedisBackend redis = (RedisBackend) backend;
                timeline.note(HARNESS, Event.Type.FAULT, g.get().lock(), "FAILOVER (holder " + g.get().source() + ")");
                String what = redis.failover();
                timeline.note(HARNESS, Event.Type.FAULT, g.get().lock(), "FAILOVER_DONE " + what);
                redis.awaitReplicaInSync();
                timeline.note(HARNESS, Event.Type.NOTE, g.get().lock(), "the new master's replica is in sync");
                Thread.sleep(expiry.toMillis());
            }
            case REDIS_SLOT_MIGRATION -> {
                Optional<Event> g = awaitAfterWarmUp(e -> e.type() == Event.Type.GRANTED);
                if (g.isEmpty()) {
                    return false;
                }
                String lock = g.get().lock();
                boolean moved = ((RedisBackend) backend).migrateSlotOf(lock, expiry, Duration.ofMillis(100),
                        step -> timeline.note(HARNESS, Event.Type.FAULT, lock, step));
                if (!moved) {
                    timeline.note(HARNESS, Event.Type.NOTE, lock, "no key of " + lock + " found to migrate");
                    return false;
                }
            }
            case MIXED_EXPIRY_RESTART -> {
                // a long-expiry worker (w0 or w1) holding
                Optional<Event> g = awaitAfterWarmUp(e -> e.type() == Event.Type.GRANTED
                        && (e.source().equals("w0") || e.source().equals("w1")));
                if (g.isEmpty()) {
                    return false;
                }
                timeline.note(HARNESS, Event.Type.FAULT, g.get().lock(), "SERVER_KILL (long-expiry holder "
                        + g.get().source() + ")");
                backend.killServer();
                backend.startServer();
                timeline.note(HARNESS, Event.Type.FAULT, g.get().lock(), "SERVER_START");
                Thread.sleep(expiry.toMillis());
            }
            case FILE_INTERRUPTED_CLOSE -> {
                Optional<Event> r = timeline.await(0, e -> e.type() == Event.Type.RELEASED && e.source().equals("w0"),
                        Duration.ofSeconds(60));
                if (r.isEmpty()) {
                    return false;
                }
                timeline.note(HARNESS, Event.Type.FAULT, r.get().lock(), "CLOSE_INTERRUPTED w0 (" + r.get().detail() + ")");
                String lock = r.get().lock();
                long at = r.get().nanos();
                timeline.await(0, e -> e.type() == Event.Type.GRANTED && e.lock().equals(lock)
                        && !e.source().equals("w0") && e.nanos() - at > 0, expiry.plus(profile.slack()));
                Thread.sleep(300);
                return true;
            }
            case CLOCK_SKEW -> Thread.sleep(expiry.multipliedBy(4).plusSeconds(2).toMillis());
            case CLOCK_JUMP -> {
                String first = null;
                for (String spec : List.of("+" + Math.max(90, 3 * expiry.toSeconds()) + "s",
                        "-" + Math.max(90, 3 * expiry.toSeconds()) + "s")) {
                    String not = first;
                    Optional<Event> g = awaitAfterWarmUp(e -> e.type() == Event.Type.GRANTED && !e.source().equals(not));
                    if (g.isEmpty()) {
                        return false;
                    }
                    String w = g.get().source();
                    first = w;
                    writeClock(clockFiles.get(w), spec);
                    timeline.note(HARNESS, Event.Type.FAULT, g.get().lock(), "CLOCK " + w + " " + spec + " (while holding)");
                    Thread.sleep(expiry.toMillis());
                }
            }
            case CONTENTION -> {
                // no fault: the workers stop after their cycles
                long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
                for (WorkerProcess w : workers.values()) {
                    w.awaitRunEnd(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
                }
                return true;
            }
            case REGION_SERVER_ABORT -> {
                Optional<Event> g = awaitAfterWarmUp(e -> e.type() == Event.Type.GRANTED);
                if (g.isEmpty()) {
                    return false;
                }
                timeline.note(HARNESS, Event.Type.FAULT, g.get().lock(), "RS_ABORT (holder " + g.get().source() + ")");
                backend.abortRegionServer();
                ((HBaseBackend) backend).awaitTableAvailable(Duration.ofMinutes(3));
                timeline.note(HARNESS, Event.Type.FAULT, g.get().lock(), "TABLE_AVAILABLE");
            }
            default -> throw new IllegalStateException("no injection for " + scenario);
        }
        if (cut != null) {
            // liveness: wait for the next grant of the cut holder's lock, up to the bound, then a little more
            String lock = cut.lock();
            String worker = cut.worker();
            long at = cut.at();
            long bound = expiry.plus(profile.slack()).toNanos();
            timeline.await(0, e -> e.type() == Event.Type.GRANTED && e.lock().equals(lock) && !e.source().equals(worker)
                    && e.nanos() - at > 0, Duration.ofNanos(Math.max(0, at + bound - System.nanoTime())));
            Thread.sleep(300);
        } else {
            Thread.sleep(expiry.plusMillis(1000).toMillis());
        }
        return true;
    }

    /**
     * Cuts a fresh holder off for twice the expiry, then lets it go on. STOP_HOLDER and FREEZE_CONNECTION share this.
     * Its worker is marked spent before the fault, so no later run gets a JVM the fault acted on.
     *
     * @param cutNote  the timeline's word for the cut, before the worker's id
     * @param cutOff   cuts the worker off, by id
     * @param backNote the timeline's word for the end of the cut
     * @param back     lets the worker go on, by id
     * @return the cut, or empty when no grant came
     */
    private Optional<Cut> cutOffHolder(String cutNote, Consumer<String> cutOff, String backNote, Consumer<String> back)
            throws InterruptedException {
        Optional<Event> g = awaitAfterWarmUp(e -> e.type() == Event.Type.GRANTED);
        if (g.isEmpty()) {
            return Optional.empty();
        }
        String w = g.get().source();
        Cut cut = new Cut(g.get().lock(), w, System.nanoTime());
        spent.add(w);
        cutOff.accept(w);
        timeline.note(HARNESS, Event.Type.FAULT, cut.lock(), cutNote + " " + w);
        Thread.sleep(expiry.multipliedBy(2).toMillis());
        timeline.note(HARNESS, Event.Type.FAULT, cut.lock(), backNote + " " + w);
        back.accept(w);
        return Optional.of(cut);
    }

    private void kill(String worker) {
        spent.add(worker);
        Process p = workers.get(worker).process();
        p.destroyForcibly(); // SIGKILL
        timeline.note(HARNESS, Event.Type.FAULT, worker, "KILL " + worker);
        try {
            p.waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits for a matching event after some grants happened (a few, or a random number in the long profile). */
    private Optional<Event> awaitAfterWarmUp(Predicate<Event> match) throws InterruptedException {
        int warm = profile.randomTiming() ? random.nextInt(6) : 0;
        int from = 0;
        for (int i = 0; i < warm; i++) {
            Optional<Event> g = timeline.await(from, e -> e.type() == Event.Type.GRANTED, Duration.ofSeconds(30));
            if (g.isEmpty()) {
                return Optional.empty();
            }
            from = timeline.after(g.get());
        }
        return timeline.await(from, match, Duration.ofSeconds(30));
    }

    /**
     * A worker waiting for the lock while another holds it (its last step is an ACQUIRE not answered yet), a moment
     * into its wait.
     */
    private Optional<String> awaitWaiter() throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        int from = 0;
        while (System.nanoTime() - deadline < 0) {
            Optional<Event> g = from == 0 ? awaitAfterWarmUp(e -> e.type() == Event.Type.GRANTED)
                    : timeline.await(from, e -> e.type() == Event.Type.GRANTED, Duration.ofSeconds(10));
            if (g.isEmpty()) {
                return Optional.empty();
            }
            from = timeline.after(g.get());
            String holder = g.get().source();
            Map<String, Event.Type> last = new HashMap<>();
            for (Event e : timeline.events()) {
                if (e.type() == Event.Type.ACQUIRE || e.type() == Event.Type.GRANTED || e.type() == Event.Type.REFUSED) {
                    last.put(e.source(), e.type());
                }
            }
            Thread.sleep(profile.randomTiming() ? 5 + random.nextInt(100) : 30);
            for (Map.Entry<String, Event.Type> w : last.entrySet()) {
                if (!w.getKey().equals(holder) && w.getValue() == Event.Type.ACQUIRE && workers.get(w.getKey()).process().isAlive()) {
                    return Optional.of(w.getKey());
                }
            }
        }
        return Optional.empty();
    }

    /** The holder a fault cut off: its lock, its worker, and when the fault began (System.nanoTime). */
    private record Cut(String lock, String worker, long at) {
    }

    /** Sets the clock of a worker started under libfaketime with {@code file}: an atomic replace. */
    static void writeClock(Path file, String spec) {
        try {
            Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
            Files.writeString(tmp, spec + "\n");
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
