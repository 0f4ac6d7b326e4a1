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
 * A locker's hooks as its collaborators see them: each method calls the hook of the same name. It is the one path
 * from the engine's collaborators to the backend, and it calls nothing else of the locker.
 *
 * @param <S> what the backend remembers of one claim
 */
final class HookCalls<S extends LockStatus> implements Backend<S> {

    private final AbstractLocker<S> locker;

    HookCalls(AbstractLocker<S> locker) {
        this.locker = locker;
    }

    @Override
    public S write(KeyColumn lock, LockOwner owner, AbstractLocker.Waiting waiting) {
        return locker.writeSingleLock(lock, owner, waiting);
    }

    @Override
    public S check(KeyColumn lock, S status) {
        return locker.checkSingleLock(lock, status);
    }

    @Override
    public S verify(KeyColumn lock, S status) {
        return locker.verifySingleLock(lock, status);
    }

    @Override
    public S renew(KeyColumn lock, S status) {
        return locker.renewSingleLock(lock, status);
    }

    @Override
    public void delete(KeyColumn lock, S status) {
        locker.deleteSingleLock(lock, status);
    }

    @Override
    public Optional<LockOwner> readHolder(KeyColumn lock) {
        return locker.readHolder(lock);
    }

    @Override
    public Optional<LockInfo> readHolding(KeyColumn lock) {
        return locker.readHolding(lock);
    }

    @Override
    public boolean deleteAllClaims(KeyColumn lock) {
        return locker.deleteAllClaims(lock);
    }

    @Override
    public boolean deleteClaimWithToken(KeyColumn lock, long token, byte[] record) {
        return locker.deleteClaimWithToken(lock, token, record);
    }

    @Override
    public LockPage listHeld(byte[] keyPrefix, int limit, String cursor) {
        return locker.listHeld(keyPrefix, limit, cursor);
    }

    @Override
    public Optional<byte[]> readRecord(KeyColumn lock, String name) {
        return locker.readRecord(lock, name);
    }

    @Override
    public boolean writeRecord(KeyColumn lock, String name, byte[] value, S holding) {
        return locker.writeRecord(lock, name, value, holding);
    }

    @Override
    public void putRecord(KeyColumn lock, String name, byte[] value) {
        locker.putRecord(lock, name, value);
    }

    @Override
    public void startWaiting(AbstractLocker.Waiting waiting) {
        locker.startWaiting(waiting);
    }

    @Override
    public void awaitRelease(AbstractLocker.Waiting waiting, TemporaryLockingException refusal, long maxNanos)
            throws InterruptedException {
        locker.awaitRelease(waiting, refusal, maxNanos);
    }

    @Override
    public void stopWaiting(AbstractLocker.Waiting waiting, boolean acquired) {
        locker.stopWaiting(waiting, acquired);
    }

    @Override
    public boolean toldOfReleases() {
        return locker.toldOfReleases();
    }

    @Override
    public LockingException translate(RuntimeException e, KeyColumn lock, String action) {
        return locker.translate(e, lock, action);
    }
}
