package dev.locker.shedlock;

import net.javacrumbs.shedlock.core.AbstractSimpleLock;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;

import java.util.Optional;

/** ShedLock's handle on one grant: valid until unlocked or extended, as {@link AbstractSimpleLock} enforces. */
final class LockerSimpleLock extends AbstractSimpleLock {

    private final Holding holding;

    LockerSimpleLock(LockConfiguration configuration, Holding holding) {
        super(configuration);
        this.holding = holding;
    }

    @Override
    protected void doUnlock() {
        LockedTask.left(holding);
        holding.unlock(lockConfiguration.getLockAtLeastUntil());
    }

    @Override
    protected Optional<SimpleLock> doExtend(LockConfiguration newConfiguration) {
        if (!holding.extend(newConfiguration.getLockAtMostUntil())) {
            return Optional.empty();
        }
        return Optional.of(new LockerSimpleLock(newConfiguration, holding));
    }

    @Override
    public String toString() {
        return "LockerSimpleLock[" + lockConfiguration.getName() + ", until " + lockConfiguration.getLockAtMostUntil() + "]";
    }
}
