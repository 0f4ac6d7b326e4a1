package dev.locker.faults;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Judges one run's merged timeline.
 *
 * <ol>
 *   <li><b>Overlap within valid leases</b>: a worker's hold of a lock runs from its {@code GRANTED} to its release,
 *       its lost signal or its death (SIGKILL), and counts only while the worker still believed it valid: up to the
 *       latest validity deadline it observed (at the grant, after each renewal, at each write, at release). Two
 *       workers' holds of one lock that overlap within those bounds are a violation.</li>
 *   <li><b>Stale write accepted</b>: the referee accepted a write with token T for a lock after another worker had
 *       been granted that lock with a token greater than T (its {@code GRANTED} is earlier on the timeline); and the
 *       referee's {@code CLASH}es (one token, two writers).</li>
 *   <li><b>Liveness</b>: after a fault cuts off a holder (SIGKILL, SIGSTOP, frozen connection), the next grant of its
 *       lock to another worker comes within expiry + lock wait + slack; after a holder closed its lease on an
       interrupted thread ({@code CLOSE_INTERRUPTED}), within lock wait + slack, without the expiry.</li>
 *   <li><b>No claim left behind</b>: counted by the harness ({@code list} on the backend after the run).</li>
 * </ol>
 */
public final class Checker {

    /** One hold of a lock by a worker, as reconstructed from the timeline. */
    static final class Hold {
        final String worker;
        final String lock;
        final long token;
        final long start;
        long end = Long.MAX_VALUE;
        long maxDeadline;
        long releasedAt = Long.MAX_VALUE;
        String endedBy = "open";

        Hold(String worker, String lock, long token, long start, long deadline) {
            this.worker = worker;
            this.lock = lock;
            this.token = token;
            this.start = start;
            // a deadline of 0 is a worker's "already invalid at the grant": valid for no instant, not until the instant
            // 0 (System.nanoTime() may be negative, and 0 would then lie after the whole hold)
            this.maxDeadline = deadline == 0 ? start : deadline;
        }

        long validEnd() {
            return Math.min(end, maxDeadline);
        }

        void observe(long deadline) {
            if (deadline != 0 && deadline - maxDeadline > 0) {
                maxDeadline = deadline;
            }
        }

        @Override
        public String toString() {
            return worker + " held " + lock + " token " + token + " from " + start + " until " + end + " (" + endedBy
                    + "), valid until " + validEnd();
        }
    }

    private final Duration expiry;
    private final Duration lockWait;
    private final Duration slack;

    /**
     * A checker for runs with these settings.
     *
     * @param expiry   the claims' expiry
     * @param lockWait the lock wait (zero on atomic backends)
     * @param slack    the stated slack of the liveness bound
     */
    public Checker(Duration expiry, Duration lockWait, Duration slack) {
        this.expiry = expiry;
        this.lockWait = lockWait;
        this.slack = slack;
    }

    /**
     * The liveness bound: expiry + lock wait + slack.
     *
     * @return the bound
     */
    public Duration livenessBound() {
        return expiry.plus(lockWait).plus(slack);
    }

    /**
     * Judges a timeline.
     *
     * @param events    the merged timeline, by time
     * @param leftovers claims found on the backend after the run (-1 when not looked at)
     * @return the verdict
     */
    public Verdict check(List<Event> events, int leftovers) {
        List<Hold> holds = holds(events);
        Verdict.Builder v = new Verdict.Builder();
        v.leftovers = leftovers;
        for (Hold h : holds) {
            v.grants++;
        }
        for (Event e : events) {
            switch (e.type()) {
                case REFUSED -> v.refusals++;
                case ACCEPTED -> v.writesAccepted++;
                case STALE -> v.staleRefused++;
                case CLASH -> {
                    v.clashes++;
                    v.example(e.toLine(), events, e.nanos());
                }
                case LOST -> v.losses.merge(e.detail().split(" ", 2)[0], 1, Integer::sum);
                default -> {
                }
            }
        }
        overlaps(holds, v, events);
        staleAccepted(events, v);
        liveness(events, holds, v);
        return v.build();
    }

    /** Reconstructs every hold from GRANTED to RELEASE / LOST / SIGKILL, with the deadlines its worker observed. */
    static List<Hold> holds(List<Event> events) {
        List<Hold> all = new ArrayList<>();
        Map<String, Hold> open = new HashMap<>(); // worker -> its open hold (a worker holds one lease at a time)
        Map<String, Hold> byToken = new HashMap<>(); // worker + token -> hold, for late lost signals
        for (Event e : events) {
            String w = e.source();
            switch (e.type()) {
                case GRANTED -> {
                    Hold h = new Hold(w, e.lock(), e.token(), e.nanos(), e.deadline());
                    Hold prev = open.put(w, h);
                    if (prev != null && prev.end == Long.MAX_VALUE) {
                        prev.end = e.nanos();
                        prev.endedBy = "next grant";
                    }
                    all.add(h);
                    byToken.put(w + "/" + e.token(), h);
                }
                case DEADLINE, WRITE -> {
                    Hold h = open.get(w);
                    if (h != null && h.end == Long.MAX_VALUE) {
                        h.observe(e.deadline());
                    }
                }
                case RELEASE -> {
                    Hold h = open.get(w);
                    close(h, e, "release");
                }
                case RELEASED -> {
                    Hold h = open.remove(w);
                    if (h != null) {
                        h.releasedAt = e.nanos();
                    }
                }
                case LOST -> {
                    Hold h = byToken.get(w + "/" + e.token());
                    if (h != null && h.end == Long.MAX_VALUE) {
                        h.end = e.nanos();
                        h.endedBy = "lost";
                    }
                }
                case FAULT -> {
                    String[] f = e.detail().split(" ");
                    if (f.length >= 2 && f[0].equals("KILL")) {
                        close(open.get(f[1]), e, "SIGKILL");
                    }
                }
                default -> {
                }
            }
        }
        return all;
    }

    private static void close(Hold h, Event e, String why) {
        if (h != null && h.end == Long.MAX_VALUE) {
            if (e.type() == Event.Type.RELEASE) {
                h.observe(e.deadline());
            }
            h.end = e.nanos();
            h.endedBy = why;
        }
    }

    private static void overlaps(List<Hold> holds, Verdict.Builder v, List<Event> events) {
        Map<String, List<Hold>> byLock = new TreeMap<>();
        for (Hold h : holds) {
            byLock.computeIfAbsent(h.lock, k -> new ArrayList<>()).add(h);
        }
        for (List<Hold> list : byLock.values()) {
            list.sort((a, b) -> Long.compare(a.start, b.start));
            for (int i = 0; i < list.size(); i++) {
                Hold a = list.get(i);
                for (int j = i + 1; j < list.size(); j++) {
                    Hold b = list.get(j);
                    if (b.start - a.validEnd() >= 0) {
                        break; // the holds after b start later still
                    }
                    if (a.worker.equals(b.worker) || b.validEnd() - b.start <= 0) {
                        continue;
                    }
                    long overlap = Math.min(a.validEnd(), b.validEnd()) - b.start;
                    if (overlap > 0) {
                        v.overlaps++;
                        v.maxOverlapNanos = Math.max(v.maxOverlapNanos, overlap);
                        v.example("overlap of " + overlap / 1_000_000 + " ms: " + a + " / " + b, events, b.start);
                    }
                }
            }
        }
    }

    private static void staleAccepted(List<Event> events, Verdict.Builder v) {
        Map<String, List<long[]>> granted = new HashMap<>(); // lock -> grants so far (token) with worker index
        Map<String, List<String>> grantedBy = new HashMap<>();
        for (Event e : events) {
            if (e.type() == Event.Type.GRANTED) {
                granted.computeIfAbsent(e.lock(), k -> new ArrayList<>()).add(new long[]{e.token()});
                grantedBy.computeIfAbsent(e.lock(), k -> new ArrayList<>()).add(e.source());
            } else if (e.type() == Event.Type.ACCEPTED) {
                String writer = Referee.writer(e);
                List<long[]> tokens = granted.getOrDefault(e.lock(), List.of());
                List<String> workers = grantedBy.getOrDefault(e.lock(), List.of());
                for (int i = 0; i < tokens.size(); i++) {
                    if (tokens.get(i)[0] > e.token() && !workers.get(i).equals(writer)) {
                        v.staleAccepted++;
                        v.example("stale write accepted: " + e.toLine() + " after " + workers.get(i) + " was granted "
                                + tokens.get(i)[0], events, e.nanos());
                        break;
                    }
                }
            }
        }
    }

    /**
     * The bound after a holder closed its lease itself: lock wait + slack, without the expiry, since a close that
     * worked left no claim to wait out.
     *
     * @return the bound
     */
    public Duration closedLivenessBound() {
        return lockWait.plus(slack);
    }

    /** A holder closed its lease on an interrupted thread: the next grant of its lock must not wait for the expiry. */
    private void closedInterrupted(String worker, Event f, List<Event> events, List<Hold> holds, Verdict.Builder v) {
        Hold cut = null;
        for (Hold h : holds) {
            if (h.worker.equals(worker) && h.start - f.nanos() <= 0) {
                cut = h; // its last hold before the fault's note: the one it closed
            }
        }
        if (cut == null || cut.end == Long.MAX_VALUE) {
            return;
        }
        long closedAt = cut.end;
        Long next = null;
        for (Hold h : holds) {
            if (h.lock.equals(cut.lock) && !h.worker.equals(worker) && h.start - closedAt > 0) {
                next = next == null ? h.start : Math.min(next, h.start);
            }
        }
        if (next == null) {
            v.livenessMissing++;
            v.example("no grant of " + cut.lock + " after " + f.toLine(), events, f.nanos());
            return;
        }
        long latency = next - closedAt;
        v.takeovers.add(latency);
        if (latency > closedLivenessBound().toNanos()) {
            v.livenessViolations++;
            v.example("grant of " + cut.lock + " " + latency / 1_000_000 + " ms after its holder closed it > bound "
                    + closedLivenessBound().toMillis() + " ms: " + f.toLine(), events, f.nanos());
        }
    }

    private void liveness(List<Event> events, List<Hold> holds, Verdict.Builder v) {
        for (Event f : events) {
            if (f.type() != Event.Type.FAULT) {
                continue;
            }
            String[] d = f.detail().split(" ");
            if (d.length >= 2 && d[0].equals("CLOSE_INTERRUPTED")) {
                closedInterrupted(d[1], f, events, holds, v);
                continue;
            }
            if (d.length < 2 || !(d[0].equals("KILL") || d[0].equals("STOP") || d[0].equals("FREEZE"))) {
                continue;
            }
            String worker = d[1];
            Hold cut = null;
            for (Hold h : holds) {
                // a hold is cut when the fault came before its release step ended (a kill inside the step counts:
                // the claim may still be on the backend)
                if (h.worker.equals(worker) && h.start - f.nanos() <= 0
                        && (h.end - f.nanos() >= 0 || h.releasedAt - f.nanos() >= 0)) {
                    cut = h;
                }
            }
            if (cut == null) {
                continue; // it held nothing (a waiter): no takeover to wait for
            }
            Long next = null;
            for (Hold h : holds) {
                if (h.lock.equals(cut.lock) && !h.worker.equals(worker) && h.start - f.nanos() > 0) {
                    next = next == null ? h.start : Math.min(next, h.start);
                }
            }
            if (next == null) {
                v.livenessMissing++;
                v.example("no grant of " + cut.lock + " after " + f.toLine(), events, f.nanos());
                continue;
            }
            long latency = next - f.nanos();
            v.takeovers.add(latency);
            if (latency > livenessBound().toNanos()) {
                v.livenessViolations++;
                v.example("takeover of " + cut.lock + " after " + latency / 1_000_000 + " ms > bound "
                        + livenessBound().toMillis() + " ms: " + f.toLine(), events, f.nanos());
            }
        }
    }
}
