package dev.locker.bomexample;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.Lockers;

/**
 * What a user's code looks like with only {@code locker-bom} and {@code locker-redis} in its build: open a locker by
 * URI, take a lease, act under its fencing token, release.
 */
public final class RenameJob {

    private RenameJob() {
    }

    /**
     * Runs the job once under the lock {@code jobs/rename}.
     *
     * @param uri the locker URI, e.g. {@code redis://localhost:6379}
     * @return the fencing token the job acted under
     */
    public static long runOnce(String uri) {
        try (Locker locker = Lockers.open(uri);
             Lease lease = locker.acquire(KeyColumn.of("jobs", "rename"), "rename job")) {
            return lease.fencingToken(); // pass it to every write the job makes
        }
    }

    /**
     * Command line: {@code RenameJob redis://host:port}.
     *
     * @param args the locker URI
     */
    public static void main(String[] args) {
        System.out.println("ran under fencing token " + runOnce(args.length > 0 ? args[0] : "redis://localhost:6379"));
    }
}
