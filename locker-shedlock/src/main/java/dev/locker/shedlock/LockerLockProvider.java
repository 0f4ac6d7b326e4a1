package dev.locker.shedlock;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.LockException;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;

/**
 * A ShedLock {@link ExtensibleLockProvider} over one {@link Locker}, so any Locker URI serves {@code @SchedulerLock}.
 *
 * <h2>Mapping</h2>
 * A ShedLock lock name is the Locker lock {@link #lockOf(String)}: the key prefix, then the name, with no column.
 * {@link #lock} takes it with one attempt and no wait. A lock held elsewhere, or by another task of this process,
 * gives an empty result. A backend that cannot be reached or refuses throws {@link LockException} with the cause.
 *
 * <h2>Durations under today's Locker API</h2>
 * The locker has one expiry for every lease, so ShedLock's two durations are kept by this process.
 * A scheduled release gives the lease back at lockAtMostUntil; extend renews the lease and moves that release.
 * Unlock before lockAtLeastUntil keeps the lease until then, renewed in the background when it must outlive its claim.
 * If this process dies, its claim lives until the locker's expiry instead: shorter or longer than either duration.
 * Per-lease expiries and a hold-at-least kept on the backend will close that gap.
 *
 * <h2>Fencing</h2>
 * Every grant carries the lock's fencing token, which the task reads through {@link LockedTask#fencingToken()}.
 * An extension renews the same claim in place, so the token does not change.
 */
public final class LockerLockProvider implements ExtensibleLockProvider, AutoCloseable {

    /** Recorded with every claim this provider writes: operators see who took the lock. */
    static final String WHY = "ShedLock";

    private final Locker locker;
    private final boolean ownsLocker;
    private final String keyPrefix;
    private final ScheduledThreadPoolExecutor releases;
    private final Set<Holding> holdings = ConcurrentHashMap.newKeySet();

    /**
     * A provider over {@code locker}, whose ShedLock lock names are Locker lock names as they are.
     * The caller keeps the locker and closes it after this provider.
     *
     * @param locker the locker that keeps the claims
     */
    public LockerLockProvider(Locker locker) {
        this(locker, "");
    }

    /**
     * A provider over {@code locker} whose locks are named {@code keyPrefix + name}, such as {@code "shedlock:"}.
     * The caller keeps the locker and closes it after this provider.
     *
     * @param locker    the locker that keeps the claims
     * @param keyPrefix put before every ShedLock name; may be empty
     */
    public LockerLockProvider(Locker locker, String keyPrefix) {
        this(locker, keyPrefix, false);
    }

    private LockerLockProvider(Locker locker, String keyPrefix, boolean ownsLocker) {
        this.locker = Objects.requireNonNull(locker, "locker");
        this.keyPrefix = Objects.requireNonNull(keyPrefix, "keyPrefix");
        this.ownsLocker = ownsLocker;
        this.releases = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "locker-shedlock-release");
            t.setDaemon(true);
            return t;
        });
        // a release moved by extend or unlock cancels the old one: drop it at once, not at its old time
        releases.setRemoveOnCancelPolicy(true);
    }

    /**
     * A provider over a locker opened from {@code uri} ({@link Lockers#open(String)}); {@link #close()} closes it.
     *
     * @param uri the locker's URI, such as {@code redis://host:6379} or {@code file:/var/lib/app/locks}
     * @return the provider
     */
    public static LockerLockProvider open(String uri) {
        return new LockerLockProvider(Lockers.open(uri), "", true);
    }

    /**
     * The locker that keeps this provider's claims: ask it who holds a lock ({@link Locker#holding}).
     *
     * @return the locker
     */
    public Locker locker() {
        return locker;
    }

    /**
     * The Locker lock that stands for the ShedLock lock {@code name}.
     *
     * @param name a ShedLock lock name
     * @return the lock: key {@code keyPrefix + name}, no column
     * @throws IllegalArgumentException when the name cannot be encoded as UTF-8
     */
    public KeyColumn lockOf(String name) {
        Objects.requireNonNull(name, "name");
        return KeyColumn.named(keyPrefix + name);
    }

    @Override
    public Optional<SimpleLock> lock(LockConfiguration lockConfiguration) {
        Objects.requireNonNull(lockConfiguration, "lockConfiguration");
        String name = lockConfiguration.getName();
        KeyColumn lock = lockOf(name);
        if (releases.isShutdown()) {
            throw new IllegalStateException("the ShedLock provider is closed: cannot lock " + lock.legible());
        }
        Acquisition acquisition = locker.acquireWithin(lock, WHY, Duration.ZERO);
        switch (acquisition.outcome()) {
            case ACQUIRED:
                Lease lease = acquisition.lease().orElseThrow();
                Holding holding = new Holding(name, lock, lease, releases, holdings::remove);
                holdings.add(holding);
                holding.releaseAt(lockConfiguration.getLockAtMostUntil());
                LockedTask.entered(holding);
                return Optional.of(new LockerSimpleLock(lockConfiguration, holding));
            case BUSY:
                return Optional.empty();
            default:
                throw new LockException("could not lock " + lock.legible() + ": " + acquisition.outcome(),
                        acquisition.failure().orElse(null));
        }
    }

    /**
     * Stops the scheduled releases and gives every lease of this provider back at once, cutting short the
     * lockAtLeastFor of tasks that finished. Closes the locker when {@link #open(String)} opened it.
     */
    @Override
    public void close() {
        releases.shutdownNow();
        for (Holding h : holdings) {
            h.releaseNow();
        }
        if (ownsLocker) {
            locker.close();
        }
    }

    @Override
    public String toString() {
        return "LockerLockProvider[" + locker + (keyPrefix.isEmpty() ? "" : ", prefix " + keyPrefix) + "]";
    }

}
