package dev.locker.local;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockStatus;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.LockDriver;
import dev.locker.spi.LockRecords;
import dev.locker.spi.WaitQueue;
import dev.locker.spi.Waiting;

import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A driver over the hooks of an {@link AbstractLocker}: each operation calls the hook it replaces. The hooks read the
 * expiry from the locker's configuration, which is the one the engine passes, so the expiry arguments are not used.
 *
 * @param <S> what the backend remembers of one claim
 */
final class HookCalls<S extends LockStatus> implements LockDriver<S>, WaitQueue, LockRecords<S> {

    /** Set once, in the locker's constructor; volatile, so a locker published without a barrier still finds it. */
    private volatile AbstractLocker<S> locker;

    /** The locker whose hooks it calls, once that locker's engine is built. */
    void bind(AbstractLocker<S> hooks) {
        this.locker = hooks;
    }

    @Override
    public S write(KeyColumn lock, LockOwner owner, Duration expiry, Waiting waiting) {
        return locker.writeSingleLock(lock, owner, waiting);
    }

    @Override
    public S verify(KeyColumn lock, S claim) {
        return claim.isHeld() ? locker.verifySingleLock(lock, claim) : locker.checkSingleLock(lock, claim);
    }

    @Override
    public S renew(KeyColumn lock, S claim, Duration expiry) {
        return locker.renewSingleLock(lock, claim);
    }

    @Override
    public void release(KeyColumn lock, S claim) {
        locker.deleteSingleLock(lock, claim);
    }

    /**
     * The hooks read the configured expiry, so a lease of another expiry is refused rather than ignored. For the
     * same reason a claim left for its hold-at-least lives the configured expiry from its release, not the time left.
     * A release's answer comes from {@link LockDriver#releaseOwned}'s default: verify, then release.
     */
    @Override
    public void checkExpiry(Duration expiry) {
        Duration configured = locker.config().expiry();
        if (!expiry.equals(configured)) {
            throw new IllegalArgumentException("expiry " + expiry + " differs from this locker's configured expiry "
                    + configured + ": " + locker.getClass().getSimpleName() + " keeps one expiry for every claim");
        }
    }

    @Override
    public Optional<LockInfo> readHolder(KeyColumn lock) {
        return locker.readHolding(lock);
    }

    @Override
    public boolean remove(KeyColumn lock, OptionalLong expectedToken, byte[] record) {
        return expectedToken.isPresent() ? locker.deleteClaimWithToken(lock, expectedToken.getAsLong(), record)
                : locker.deleteAllClaims(lock);
    }

    @Override
    public LockPage list(byte[] keyPrefix, int limit, String cursor) {
        return locker.listHeld(keyPrefix, limit, cursor);
    }

    @Override
    public void close() {
        locker.closeBackend();
    }

    @Override
    public LockingException translate(RuntimeException e, KeyColumn lock, String action) {
        return locker.translate(e, lock, action);
    }

    /** The translation every driver gets, for the hook's own default. */
    LockingException translateByDefault(RuntimeException e, KeyColumn lock, String action) {
        return LockDriver.super.translate(e, lock, action);
    }

    @Override
    public Optional<WaitQueue> waitQueue() {
        return Optional.of(this);
    }

    @Override
    public Optional<LockRecords<S>> records() {
        return Optional.of(this);
    }

    @Override
    public void startWaiting(Waiting waiting) {
        locker.startWaiting(waiting);
    }

    @Override
    public void awaitRelease(Waiting waiting, TemporaryLockingException refusal, long maxNanos)
            throws InterruptedException {
        locker.awaitRelease(waiting, refusal, maxNanos);
    }

    @Override
    public void stopWaiting(Waiting waiting, boolean acquired) {
        locker.stopWaiting(waiting, acquired);
    }

    @Override
    public boolean toldOfReleases() {
        return locker.toldOfReleases();
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
}
