package dev.locker.local;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockStatus;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;

import java.util.Optional;

/**
 * A locker's backend as the engine's collaborators see it: the hooks of {@link AbstractLocker}, one method each.
 * The collaborators reach the backend only through it, never through the locker that owns them.
 *
 * @param <S> what the backend remembers of one claim
 */
interface Backend<S extends LockStatus> {

    S write(KeyColumn lock, LockOwner owner, AbstractLocker.Waiting waiting);

    S check(KeyColumn lock, S status);

    S verify(KeyColumn lock, S status);

    S renew(KeyColumn lock, S status);

    void delete(KeyColumn lock, S status);

    Optional<LockOwner> readHolder(KeyColumn lock);

    Optional<LockInfo> readHolding(KeyColumn lock);

    boolean deleteAllClaims(KeyColumn lock);

    boolean deleteClaimWithToken(KeyColumn lock, long token, byte[] record);

    LockPage listHeld(byte[] keyPrefix, int limit, String cursor);

    Optional<byte[]> readRecord(KeyColumn lock, String name);

    boolean writeRecord(KeyColumn lock, String name, byte[] value, S holding);

    void putRecord(KeyColumn lock, String name, byte[] value);

    void startWaiting(AbstractLocker.Waiting waiting);

    void awaitRelease(AbstractLocker.Waiting waiting, TemporaryLockingException refusal, long maxNanos)
            throws InterruptedException;

    void stopWaiting(AbstractLocker.Waiting waiting, boolean acquired);

    boolean toldOfReleases();

    LockingException translate(RuntimeException e, KeyColumn lock, String action);
}
