package dev.locker.sample;

import dev.locker.api.Locker;
import dev.locker.shedlock.LockedTask;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * Writes the digest on a schedule. Every instance schedules it, and ShedLock lets one instance at a time run it.
 * The starter's {@code LockProvider} keeps that lock in Locker: {@code shedlock:digest}.
 */
@Component
public class DigestJob {

    /** One run of the job: the fencing token it wrote under and the locker (the instance) that held the lock. */
    public record Run(long fencingToken, String ranBy, Instant finishedAt) {
    }

    private static final int KEPT = 100;

    private final ReportArchive archive;
    private final Locker locker;
    private final Deque<Run> runs = new ArrayDeque<>(); // guarded by itself

    /**
     * A job writing to {@code archive}.
     *
     * @param archive where the digest goes
     * @param locker  the starter's locker, whose rid names this instance in the runs
     */
    public DigestJob(ReportArchive archive, Locker locker) {
        this.archive = archive;
        this.locker = locker;
    }

    /** Writes one digest, while this instance holds {@code shedlock:digest}. */
    @Scheduled(fixedDelayString = "${sample.digest.every}")
    @SchedulerLock(name = "digest", lockAtMostFor = "5m")
    public void writeDigest() {
        // the token strictly exceeds every earlier holder's, so the archive can refuse a writer that lost the lock
        long token = LockedTask.fencingToken();
        archive.store("digest by " + locker.rid(), token);
        synchronized (runs) {
            runs.addLast(new Run(token, locker.rid(), Instant.now()));
            if (runs.size() > KEPT) {
                runs.removeFirst();
            }
        }
    }

    /**
     * The newest runs of this instance, oldest first.
     *
     * @return up to the last 100 runs
     */
    public List<Run> runs() {
        synchronized (runs) {
            return new ArrayList<>(runs);
        }
    }
}
