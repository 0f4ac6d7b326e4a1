package dev.locker.api;

/**
 * Where the transactions of one process meet before any of them reaches a backend (locker-engine's
 * {@code LocalLockMediator}). Lockers of one process on the same backend should share one, so that two of their
 * transactions never race each other in the store: take it from a locker ({@link Locker#arbitration()}) and give it to
 * the next one ({@link LockerConfig.Builder#localArbitration}, {@link Lockers#open(String, LockerConfig, LocalArbitration)}).
 * Sharing is never needed for safety (backends tell claims apart per claim), only to fail fast without I/O.
 */
public interface LocalArbitration {

    /**
     * A name for logs.
     *
     * @return a name for logs
     */
    String name();
}
