package dev.locker.sample;

import java.util.ArrayList;
import java.util.List;

/**
 * An archive in memory that refuses a write whose fencing token is older than the newest it accepted. A database does
 * the same with a conditional write: {@code UPDATE ... WHERE fencing_token <= ?}.
 */
final class FencedReportArchive implements ReportArchive {

    private static final int KEPT = 100;

    private final List<String> reports = new ArrayList<>(); // guarded by this
    private long newestToken; // guarded by this

    @Override
    public synchronized void store(String report, long fencingToken) {
        if (fencingToken < newestToken) {
            throw new IllegalStateException("refused a report under fencing token " + fencingToken
                    + ": token " + newestToken + " wrote after it, so its writer had lost the lock");
        }
        newestToken = fencingToken;
        reports.add(report);
        if (reports.size() > KEPT) {
            reports.remove(0); // a sample keeps the newest reports only, so memory stays bounded
        }
    }
}
