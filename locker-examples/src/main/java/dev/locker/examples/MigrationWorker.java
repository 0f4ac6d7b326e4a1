package dev.locker.examples;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockOwner;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.api.Run;
import dev.locker.api.RunRecord;

import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.Objects;

/**
 * One worker process of {@link ProcessDemo}: at start-up it asks to run the one-time migration ({@code runOnce}) and,
 * while another process runs it, says who (rid, host, pid, why, since) and serves traffic instead, asking again
 * every 300 ms until the migration is done. Its migration writes five steps to the {@link FencedTarget} with its
 * lease's fencing token. It reports events on stdout as {@code EV|epoch ms|kind|text} lines for the coordinator, and
 * exits as soon as it is done (exit status 0, or 3 when it lost the lock while migrating).
 */
public final class MigrationWorker {

    static final KeyColumn JOB = KeyColumn.named("schema-migration-42");
    static final int STEPS = 5;
    private static final DateTimeFormatter CLOCK = DateTimeFormatter.ofPattern("HH:mm:ss.SSS");

    private MigrationWorker() {
    }

    /** {@code worker-name uri target-file expiry}. */
    public static void main(String[] args) {
        String name = args[0];
        String uri = args[1];
        FencedTarget target = new FencedTarget(Path.of(args[2]));
        Duration expiry = Duration.parse(args[3]);
        int status;
        try (Locker locker = Lockers.open(uri, LockerConfig.builder().rid(name).expiry(expiry).build())) {
            event("START", "opened " + scheme(uri) + " as rid " + locker.rid() + " (pid " + ProcessHandle.current().pid() + ")");
            status = work(locker, name, target);
        } catch (RuntimeException e) {
            event("ERROR", e.toString());
            status = 2;
        }
        System.out.flush();
        System.exit(status); // no backend driver thread may keep this process alive
    }

    private static int work(Locker locker, String name, FencedTarget target) throws RuntimeException {
        String lastHolder = null;
        boolean unreachableSaid = false;
        long giveUp = System.nanoTime() + Duration.ofSeconds(50).toNanos();
        while (System.nanoTime() - giveUp < 0) {
            Run run = locker.runOnce(JOB, "schema migration 42", lease -> migrate(lease, name, target));
            switch (run.outcome()) {
                case RAN:
                    event("RAN", "ran the migration to the end and recorded it (token " + run.record().orElseThrow().token() + ")");
                    return 0;
                case ALREADY_DONE:
                    RunRecord done = run.record().orElseThrow();
                    event("DONE_BEFORE", "nothing to do: migrated by " + done.ranBy().rid() + " (pid "
                            + done.ranBy().pid() + ") at " + at(done.finishedAt()) + " with token " + done.token());
                    return 0;
                case BUSY:
                    LockOwner h = run.holder().orElseThrow();
                    if (!h.rid().equals(lastHolder)) {
                        lastHolder = h.rid();
                        event("BUSY", "held by rid " + h.rid() + ", host " + h.host() + ", pid " + h.pid() + ", why \""
                                + h.why() + "\", since " + (h.since() == null ? "?" : at(h.since()))
                                + ": serves traffic meanwhile, asks again every 300 ms");
                    }
                    break;
                case UNREACHABLE:
                    if (!unreachableSaid) {
                        unreachableSaid = true;
                        event("UNREACHABLE", "backend not ready (" + run.failure().map(Throwable::getMessage).orElse("?")
                                + "); asking again");
                    }
                    break;
                case LOST:
                    String why = run.failure().filter(f -> f instanceof ExpiredLockException)
                            .map(f -> ((ExpiredLockException) f).reason().toString()).orElse("lost");
                    event("LOST", "stopped: runOnce says LOST (" + why + "): its lock was lost while it migrated, so "
                            + "its run is not recorded");
                    return 3;
                default:
                    event("FAILED", run.toString());
                    return 4;
            }
            sleep(300);
        }
        event("FAILED", "gave up after 50 s");
        return 5;
    }

    /** The migration: five steps, each written to the target with this lease's token (captured once, at start). */
    private static void migrate(Lease lease, String name, FencedTarget target) {
        long token = lease.fencingToken();
        event("MIGRATING", "won the lock, migrating with fencing token " + token);
        for (int step = 1; step <= STEPS; step++) {
            sleep(400); // the work of one step; a pause (GC, SIGSTOP) may strike here
            long higher = target.write(token, name, "step " + step);
            if (higher != 0) {
                event("REFUSED", "step " + step + " write with token " + token + " REFUSED by the target: it has seen "
                        + "token " + higher + " (a newer holder)");
                return; // nothing more to write; runOnce will find the lock gone and not record the run
            }
            event("STEP", "step " + step + "/" + STEPS + " written with token " + token);
        }
    }

    private static void event(String kind, String text) {
        System.out.println("EV|" + System.currentTimeMillis() + "|" + kind + "|" + text);
        System.out.flush();
    }

    private static String at(java.time.Instant t) {
        return LocalTime.ofInstant(t, ZoneId.systemDefault()).format(CLOCK);
    }

    private static String scheme(String uri) {
        return Objects.requireNonNull(uri).substring(0, Math.max(0, uri.indexOf(':') + 1));
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
