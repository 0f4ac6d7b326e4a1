package dev.locker.shedlock;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.LockException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * <h2>Durations, kept on the backend as ShedLock keeps lock_until</h2>
 * A lock's lease expires at lockAtMostUntil and is not kept alive; its hold-at-least is lockAtLeastFor. An unlock
 * before lockAtLeastUntil leaves the claim on the backend until then. An extension renews the lease to its new
 * lockAtMostFor, and an unlock after it keeps the claim until the new lockAtLeastUntil. So both durations hold after
 * this process died, with no renewal from it. The first lockAtLeastFor still holds after an extension with a shorter
 * one. A scheduled release also gives the lease back at lockAtMostUntil, freeing this process's record of it. An
 * instant counts as passed once it has on ShedLock's clock and, from the grant, on the monotonic clock: a step of the
 * wall clock ends no grant early. A claim lives at least two seconds on the backend, so that its grant can reach
 * this process in time.
 *
 * <p>A backend that cannot keep a claim for lockAtMostFor (shorter than its clock allowance, or longer than a
 * Redis restart guard) refuses it before any I/O. The lease then has the locker's expiry, and this process keeps
 * both durations: a dead process's claim lives one locker expiry instead (logged at info).
 *
 * <h2>Fencing</h2>
 * Every grant carries the lock's fencing token, which the task reads through {@link LockedTask#fencingToken()}.
 * An extension renews the same claim in place, so the token does not change.
 */
public final class LockerLockProvider implements ExtensibleLockProvider, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(LockerLockProvider.class);

    /** Recorded with every claim this provider writes: operators see who took the lock. */
    static final String WHY = "ShedLock";

    /** Release threads per provider: as many releases may stall on the backend before the others wait. */
    private static final int RELEASE_THREADS = 4;

    private final Locker locker;
    private final boolean ownsLocker;
    private final String keyPrefix;
    /** Releases at their instants, on a few threads: one that stalls on its backend holds up no other. */
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
        this.releases = new ScheduledThreadPoolExecutor(RELEASE_THREADS, r -> {
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
        LeaseOptions terms = LeaseOptions.expiry(Holding.claimFor(lockConfiguration.getLockAtMostFor()))
                .keepAlive(false).holdAtLeast(lockConfiguration.getLockAtLeastFor());
        boolean onBackend = true;
        Acquisition acquisition;
        try {
            acquisition = locker.acquireWithin(lock, WHY, Duration.ZERO, terms);
        } catch (IllegalArgumentException refused) {
            // refused before any I/O: this backend cannot keep a claim for lockAtMostFor, so this process keeps it
            log.info("ShedLock lock {}: the locker cannot keep lockAtMostFor {} on its backend ({}); this process "
                    + "keeps the durations, and a claim outlives a dead process by the locker's expiry instead",
                    lock.legible(), lockConfiguration.getLockAtMostFor(), refused.getMessage());
            onBackend = false;
            acquisition = locker.acquireWithin(lock, WHY, Duration.ZERO);
        }
        switch (acquisition.outcome()) {
            case ACQUIRED:
                Lease lease = acquisition.lease().orElseThrow();
                Holding holding = new Holding(name, lock, lease, onBackend, releases, holdings::remove);
                holdings.add(holding);
                holding.releaseAt(lockConfiguration.getLockAtMostUntil());
                if (releases.isShutdown()) {
                    // closed meanwhile: close gave back what it saw, and the release it refused gave back this one
                    holding.releaseNow();
                    throw new IllegalStateException("the ShedLock provider closed while it locked " + lock.legible());
                }
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
     * Stops the scheduled releases and gives every lease of this provider back at once. A claim inside its
     * lockAtLeastFor stays on the backend until then. Closes the locker when {@link #open(String)} opened it.
     */
    @Override
    public void close() {
        releases.shutdownNow();
        for (Holding h : holdings) {
            h.closeNow();
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
