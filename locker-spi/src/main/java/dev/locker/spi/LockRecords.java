package dev.locker.spi;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockStatus;

import java.util.Optional;

/**
 * A driver's capability to keep small records with a lock: a finished job's ({@link #DONE}, for run-once) and the
 * last forced release's ({@link #FORCED}). A record is not a claim: releases, expiry and forced releases leave it
 * alone, and it is gone only when the backend loses the lock's data.
 *
 * <p>The engine validates the lock before calling, and a record's name is always one of the constants here.
 *
 * @param <C> what the driver remembers of one claim
 */
public interface LockRecords<C extends LockStatus> {

    /** The name of the record a finished run leaves with its job's lock. */
    String DONE = "done";

    /** The name of the record a forced release leaves. */
    String FORCED = "forced";

    /**
     * Reads a record.
     *
     * @param lock the lock the record is kept with
     * @param name the record's name
     * @return the record's bytes, or empty when there is none
     */
    Optional<byte[]> readRecord(KeyColumn lock, String name);

    /**
     * Writes a record only while {@code holding} still holds the lock, and never over a record written under a higher
     * fencing token. Atomic with that check where the backend can; elsewhere checked just before, and the token guard
     * keeps a late writer from replacing a later holder's record.
     *
     * @param lock    the lock
     * @param name    the record's name
     * @param value   the record's bytes
     * @param holding a held claim of this driver on {@code lock}
     * @return false when the claim no longer holds the lock; nothing was written then
     */
    boolean writeRecord(KeyColumn lock, String name, byte[] value, C holding);

    /**
     * Writes a record whoever holds the lock: an operator's record, such as a forced release's.
     *
     * @param lock  the lock
     * @param name  the record's name
     * @param value the record's bytes
     */
    void putRecord(KeyColumn lock, String name, byte[] value);
}
