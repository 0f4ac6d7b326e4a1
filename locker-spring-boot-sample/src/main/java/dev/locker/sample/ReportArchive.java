package dev.locker.sample;

/** Where the digest job writes. Every write carries the fencing token of the lock it was made under. */
public interface ReportArchive {

    /**
     * Stores a report written under a lock.
     *
     * @param report       the report
     * @param fencingToken the token of the lock held while the report was made
     * @throws IllegalStateException when a write with a newer token came first: the writer lost its lock meanwhile
     */
    void store(String report, long fencingToken);
}
