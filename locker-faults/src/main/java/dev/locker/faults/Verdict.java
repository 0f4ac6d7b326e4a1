package dev.locker.faults;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What the checkers found in one run: counts of each kind of finding, the takeover latencies, and the first findings
 * with a timeline excerpt around each.
 *
 * @param grants             holds granted (cycles that got the lock)
 * @param refusals           waits that ended without the lock
 * @param writesAccepted     writes the referee accepted
 * @param staleRefused       writes the referee refused for a lower token (fencing at work)
 * @param clashes            one token from two writers
 * @param staleAccepted      writes accepted after a higher token was granted to another worker
 * @param overlaps           pairs of holds by different workers overlapping within their validity
 * @param maxOverlapNanos    the longest such overlap
 * @param takeovers          takeover latencies (fault on a holder to the next grant of its lock), nanoseconds
 * @param livenessViolations takeovers later than the bound
 * @param livenessMissing    faults on a holder after which nobody else got its lock
 * @param leftovers          claims left on the backend after the run (-1: not looked at)
 * @param losses             lost signals by reason
 * @param findings           the first findings, each with a timeline excerpt
 */
public record Verdict(int grants, int refusals, int writesAccepted, int staleRefused, int clashes, int staleAccepted,
                      int overlaps, long maxOverlapNanos, List<Long> takeovers, int livenessViolations,
                      int livenessMissing, int leftovers, Map<String, Integer> losses, List<String> findings) {

    /**
     * Whether the safety checks found anything: an overlap within valid leases, a stale write accepted, a clash.
     *
     * @return true when mutual exclusion or fencing was broken
     */
    public boolean unsafe() {
        return overlaps > 0 || staleAccepted > 0 || clashes > 0;
    }

    /**
     * Whether the liveness or clean-up checks found anything.
     *
     * @return true when a takeover was late or missing, or a claim was left behind
     */
    public boolean stuck() {
        return livenessViolations > 0 || livenessMissing > 0 || leftovers > 0;
    }

    /**
     * The longest takeover latency, or -1 when none was measured.
     *
     * @return nanoseconds, or -1
     */
    public long maxTakeoverNanos() {
        return takeovers.stream().mapToLong(Long::longValue).max().orElse(-1);
    }

    static final class Builder {
        int grants;
        int refusals;
        int writesAccepted;
        int staleRefused;
        int clashes;
        int staleAccepted;
        int overlaps;
        long maxOverlapNanos;
        final List<Long> takeovers = new ArrayList<>();
        int livenessViolations;
        int livenessMissing;
        int leftovers = -1;
        final Map<String, Integer> losses = new TreeMap<>();
        final List<String> findings = new ArrayList<>();

        /** Keeps the first few findings, each with the events around {@code at}. */
        void example(String what, List<Event> events, long at) {
            if (findings.size() >= 3) {
                return;
            }
            StringBuilder sb = new StringBuilder(what).append('\n');
            int idx = 0;
            while (idx < events.size() && events.get(idx).nanos() < at) {
                idx++;
            }
            for (int i = Math.max(0, idx - 12); i < Math.min(events.size(), idx + 12); i++) {
                sb.append("    ").append(events.get(i).toLine()).append('\n');
            }
            findings.add(sb.toString());
        }

        Verdict build() {
            return new Verdict(grants, refusals, writesAccepted, staleRefused, clashes, staleAccepted, overlaps,
                    maxOverlapNanos, List.copyOf(takeovers), livenessViolations, livenessMissing, leftovers,
                    Map.copyOf(losses), List.copyOf(findings));
        }
    }
}
