package dev.locker.janusgraph;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockingException;
import org.janusgraph.diskstorage.keycolumnvalue.StoreTransaction;
import org.janusgraph.diskstorage.locking.PermanentLockingException;
import org.janusgraph.diskstorage.locking.TemporaryLockingException;

/**
 * JanusGraph's {@link org.janusgraph.diskstorage.locking.Locker} for one locker name (a store's name plus
 * {@code _lock_}), served by a Locker shared by every store of the graph instance. The transaction is JanusGraph's
 * consistent store transaction, which it passes to all three phases. Our unchecked failures become JanusGraph's
 * checked ones with the cause kept: a {@link dev.locker.api.TemporaryLockingException} (contention, an unreachable
 * backend, an expired claim) becomes its {@link TemporaryLockingException}, a permanent one, a refused argument or a
 * closed locker its {@link PermanentLockingException}.
 *
 * <p>Because one Locker serves every store, {@code checkLocks} and {@code deleteLocks} act on all of the transaction's
 * locks at once; the second store's call finds them checked (no I/O) or released (nothing to do).
 */
final class JanusGraphLocker implements org.janusgraph.diskstorage.locking.Locker {

    private final Locker locker;
    private final LockKeys keys;
    private final CommitKeepAlive keepAlives;

    JanusGraphLocker(Locker locker, LockKeys keys, CommitKeepAlive keepAlives) {
        this.locker = locker;
        this.keys = keys;
        this.keepAlives = keepAlives;
    }

    @Override
    public void writeLock(org.janusgraph.diskstorage.util.KeyColumn lockID, StoreTransaction tx)
            throws TemporaryLockingException, PermanentLockingException {
        KeyColumn lock;
        try {
            lock = keys.lockOf(lockID);
        } catch (IllegalArgumentException e) {
            throw new PermanentLockingException("cannot lock " + lockID + ": " + e.getMessage(), e);
        }
        try {
            locker.writeLock(lock, tx);
        } catch (LockingException | IllegalArgumentException | IllegalStateException e) {
            throw translated(e);
        }
    }

    /**
     * Checks the transaction's locks, then keeps its claims alive until {@link #deleteLocks}: JanusGraph checks them
     * once, before its first data write, and may then retry a failed write for up to {@code storage.write-time}
     * (100 s by default), longer than the expiry; a claim that expired meanwhile would let another instance commit the
     * same value. While kept alive, a claim is renewed in place (a third of the expiry apart) and a claim that cannot
     * be renewed is lost before its deadline, which the check before each further write attempt reports
     * ({@link LockerStoreManager#mutateMany}). The keep-alive ends at most {@code storage.write-time} plus the expiry
     * after the check or the latest write attempt ({@link CommitKeepAlive}).
     */
    @Override
    public void checkLocks(StoreTransaction tx) throws TemporaryLockingException, PermanentLockingException {
        try {
            locker.checkLocks(tx);
        } catch (LockingException | IllegalArgumentException | IllegalStateException e) {
            throw translated(e);
        }
        keepAlives.extend(tx);
    }

    @Override
    public void deleteLocks(StoreTransaction tx) throws TemporaryLockingException, PermanentLockingException {
        keepAlives.end(tx);
        try {
            locker.deleteLocks(tx); // never throws for a store failure: it logs, and the claim expires
        } catch (LockingException | IllegalArgumentException | IllegalStateException e) {
            throw translated(e);
        }
    }

    /** JanusGraph's checked exception for one of ours, with ours as its cause and our message (which names the lock). */
    static PermanentLockingException translated(RuntimeException e) throws TemporaryLockingException {
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        if (e instanceof LockingException && ((LockingException) e).isTemporary()) {
            throw new TemporaryLockingException(message, e);
        }
        return new PermanentLockingException(message, e);
    }
}
