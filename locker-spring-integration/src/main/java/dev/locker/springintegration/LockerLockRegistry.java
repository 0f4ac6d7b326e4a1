package dev.locker.springintegration;

import dev.locker.api.KeyColumn;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;
import org.springframework.scheduling.TaskScheduler;

import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

/**
 * A Spring Integration lock registry over one {@link Locker}: the locks it hands out exclude across processes.
 *
 * <h2>Mapping</h2>
 * A lock key is a {@link String}; its Locker lock is {@link #lockOf(String)}, the key prefix and then the key.
 * {@link #obtain} returns one {@link Lock} per key, the same object each time until {@link #expireUnusedOlderThan}.
 *
 * <h2>Lock semantics, as Spring's own registries keep them</h2>
 * A lock belongs to the thread that locked it, as a {@link java.util.concurrent.locks.ReentrantLock} does.
 * The owner may lock it again: its hold count rises, and the backend lease is taken once.
 * Only the owner may unlock; any other thread gets an {@link IllegalStateException}.
 * The last unlock releases the lease; a lease found expired or taken throws {@link ConcurrentModificationException}.
 * The owner re-enters only while its lease is valid; a lost lease refuses it with an {@link IllegalStateException}.
 * Conditions are not supported. {@code lock()} waits out an outage as it waits out a holder; a {@code tryLock} that
 * ends on a backend it could not reach throws Spring's {@link org.springframework.dao.CannotAcquireLockException},
 * with the cause.
 *
 * <h2>Waiting</h2>
 * Threads of this process wait for each other inside the JVM; one at a time waits on the backend.
 * That wait is Locker's own: a Redis waiter wakes on the release, other backends retry on a short back-off.
 *
 * <h2>Expiry and renewal</h2>
 * A lease lives for the registry's expiry, or the locker's configured one when none is set.
 * With keep-alive on (the default), Locker renews it in the background until the unlock.
 * With keep-alive off, it ends at its expiry unless {@link #renewLock} extends it, as in Spring's Redis registry.
 * A process that dies leaves its claim until the expiry: choose it as the longest pause others should wait out.
 * A thread that ends without unlocking keeps its lock, as with a {@link java.util.concurrent.locks.ReentrantLock}:
 * with keep-alive on, its lease is renewed until the registry (or its locker) closes. Unlock in a finally block.
 *
 * <h2>Fencing</h2>
 * {@link #fencingToken(Object)} gives the held lock's token, to pass with every write to the guarded resource.
 */
public final class LockerLockRegistry implements ExpirableLockRegistry, RenewableLockRegistry, AutoCloseable {

    /** Recorded with every claim by default: operators see who took the lock. */
    public static final String DEFAULT_WHY = "spring-integration";

    private static final Logger log = LoggerFactory.getLogger(LockerLockRegistry.class);

    private final Locker locker;
    private final boolean ownsLocker;
    private final String keyPrefix;
    private final String why;
    private final LeaseOptions options;
    private final ConcurrentMap<String, RegistryLock> locks = new ConcurrentHashMap<>();

    private LockerLockRegistry(Builder b, Locker locker, boolean ownsLocker) {
        this.locker = locker;
        this.ownsLocker = ownsLocker;
        this.keyPrefix = b.keyPrefix;
        this.why = b.why;
        LeaseOptions o = LeaseOptions.DEFAULTS.keepAlive(b.keepAlive);
        this.options = b.expiry == null ? o : o.withExpiry(b.expiry);
    }

    /**
     * A registry over {@code locker} with the defaults: no key prefix, the locker's expiry, keep-alive on.
     * The caller keeps the locker and closes it after this registry.
     *
     * @param locker the locker that keeps the claims
     */
    public LockerLockRegistry(Locker locker) {
        this(new Builder(null), Objects.requireNonNull(locker, "locker"), false);
    }

    /**
     * A registry with the defaults over a locker opened from {@code uri}; {@link #close()} closes that locker.
     *
     * @param uri the locker's URI, such as {@code redis://host:6379} or {@code file:/var/lib/app/locks}
     * @return the registry
     */
    public static LockerLockRegistry open(String uri) {
        return builder(uri).build();
    }

    /**
     * A builder of a registry over {@code locker}, which the caller keeps and closes after the registry.
     *
     * @param locker the locker that keeps the claims
     * @return the builder
     */
    public static Builder builder(Locker locker) {
        Builder b = new Builder(null);
        b.locker = Objects.requireNonNull(locker, "locker");
        return b;
    }

    /**
     * A builder of a registry over a locker opened from {@code uri} at {@link Builder#build()}; the registry closes it.
     *
     * @param uri the locker's URI
     * @return the builder
     * @throws IllegalArgumentException when the URI has no known scheme or a bad option, before any I/O
     */
    public static Builder builder(String uri) {
        Objects.requireNonNull(uri, "uri");
        Lockers.check(uri, LockerConfig.defaults());
        return new Builder(uri);
    }

    /**
     * The locker that keeps this registry's claims: ask it who holds a lock ({@link Locker#holding}).
     *
     * @return the locker
     */
    public Locker locker() {
        return locker;
    }

    /**
     * The Locker lock that stands for the registry key {@code key}.
     *
     * @param key a lock key
     * @return the lock: key {@code keyPrefix + key}, no column
     * @throws IllegalArgumentException when the key cannot be encoded as UTF-8
     */
    public KeyColumn lockOf(String key) {
        Objects.requireNonNull(key, "key");
        return KeyColumn.named(keyPrefix + key);
    }

    /**
     * The lock for {@code lockKey}: the same object for the same key until {@link #expireUnusedOlderThan} drops it.
     *
     * @param lockKey a {@link String}
     * @return the lock
     * @throws IllegalArgumentException when the key is not a String, or cannot name a Locker lock
     */
    @Override
    public Lock obtain(Object lockKey) {
        String key = key(lockKey);
        RegistryLock existing = locks.get(key);
        if (existing == null) {
            KeyColumn lock = lockOf(key); // validated here, before the lock is kept or any I/O
            existing = locks.computeIfAbsent(key, k -> new RegistryLock(k, lock, locker, why, options, this::rejoin));
        }
        existing.touch(); // a use: expireUnusedOlderThan keeps it
        return existing;
    }

    /**
     * Forgets the locks that no thread of this process holds or waits for, and that were last taken (or obtained)
     * more than {@code age} milliseconds ago. A later {@link #obtain} of their keys makes new ones.
     *
     * @param age in milliseconds, zero or more, on this process's monotonic clock
     * @throws IllegalArgumentException when {@code age} is negative
     */
    @Override
    public void expireUnusedOlderThan(long age) {
        if (age < 0) {
            throw new IllegalArgumentException("age must be zero or positive, was " + age);
        }
        long cutoff = locker.config().timeSource().nanoTime() - TimeUnit.MILLISECONDS.toNanos(age);
        for (String key : locks.keySet()) {
            locks.computeIfPresent(key, (k, lock) -> lock.retireIfUnused(cutoff) ? null : lock);
        }
    }

    /** Puts a forgotten lock back as its key's lock, unless the key has a newer one; answers the key's lock. */
    private RegistryLock rejoin(RegistryLock lock) {
        return locks.compute(lock.key(), (k, current) -> current == null ? lock : current);
    }

    /**
     * Extends the lease of {@code lockKey}, which the current thread holds, in place to its expiry from now.
     * The claim keeps its seniority and its fencing token.
     *
     * @param lockKey a {@link String}
     * @throws IllegalStateException when the current thread does not hold the lock, or its lease was lost
     * @throws org.springframework.dao.DataAccessResourceFailureException when the backend could not be asked
     */
    @Override
    public void renewLock(Object lockKey) {
        held(lockKey).renew(null);
    }

    /**
     * Like {@link #renewLock(Object)}, to {@code ttl} from now; later renewals of this lease keep that expiry.
     *
     * @param lockKey a {@link String}
     * @param ttl     the lease's new expiry; positive, within the locker's maximum
     * @throws IllegalArgumentException when {@code ttl} is null, zero or negative, before any I/O
     * @throws IllegalStateException when the current thread does not hold the lock, or its lease was lost
     */
    public void renewLock(Object lockKey, Duration ttl) {
        if (ttl == null || ttl.isZero() || ttl.isNegative()) {
            throw new IllegalArgumentException("ttl must be positive, was " + ttl);
        }
        held(lockKey).renew(ttl);
    }

    /**
     * Not used: Locker's keep-alive renews the leases in the background ({@link Builder#keepAlive(boolean)}).
     *
     * @param renewalTaskScheduler ignored
     */
    @Override
    public void setRenewalTaskScheduler(TaskScheduler renewalTaskScheduler) {
        log.info("LockerLockRegistry does not use a renewal task scheduler: Locker's keep-alive renews its leases "
                + "(keepAlive={})", options.keepAlive());
    }

    /**
     * The fencing token of the lease on {@code lockKey}, which the current thread holds.
     * It is strictly greater than every token issued before for that lock; renewals keep it.
     *
     * @param lockKey a {@link String}
     * @return the token
     * @throws IllegalStateException when the current thread does not hold the lock
     */
    public long fencingToken(Object lockKey) {
        return held(lockKey).fencingToken();
    }

    private RegistryLock held(Object lockKey) {
        String key = key(lockKey);
        RegistryLock lock = locks.get(key);
        if (lock == null) {
            throw new IllegalStateException("the current thread does not hold the lock " + lockOf(key).legible());
        }
        return lock;
    }

    private static String key(Object lockKey) {
        if (!(lockKey instanceof String)) {
            throw new IllegalArgumentException("lockKey must be a String, was "
                    + (lockKey == null ? "null" : "a " + lockKey.getClass().getName()));
        }
        return (String) lockKey;
    }

    /**
     * Closes the locker when this registry opened it, which releases every lease still held.
     * A lock held then reports it at its unlock with a {@link ConcurrentModificationException}.
     */
    @Override
    public void close() {
        if (ownsLocker) {
            locker.close();
        }
    }

    @Override
    public String toString() {
        return "LockerLockRegistry[" + locker + ", keyPrefix=" + keyPrefix + ", " + options + "]";
    }

    /** Options of a {@link LockerLockRegistry}; the defaults are safe and each setter says its own. */
    public static final class Builder {

        private final String uri;
        private Locker locker;
        private String keyPrefix = "";
        private String why = DEFAULT_WHY;
        private Duration expiry;
        private boolean keepAlive = true;

        private Builder(String uri) {
            this.uri = uri;
        }

        /**
         * Put before every key, such as {@code "orders:"}; empty by default.
         *
         * @param prefix the prefix; may be empty
         * @return this builder
         */
        public Builder keyPrefix(String prefix) {
            this.keyPrefix = Objects.requireNonNull(prefix, "keyPrefix");
            return this;
        }

        /**
         * Recorded with every claim, shown to operators and in other processes' exceptions; "spring-integration" by default.
         *
         * @param why the reason
         * @return this builder
         */
        public Builder why(String why) {
            this.why = Objects.requireNonNull(why, "why");
            return this;
        }

        /**
         * How long a lease lives unless renewed; the locker's configured expiry by default.
         *
         * @param expiry positive, within the locker's maximum
         * @return this builder
         * @throws IllegalArgumentException when {@code expiry} is null, zero or negative
         */
        public Builder expireAfter(Duration expiry) {
            if (expiry == null || expiry.isZero() || expiry.isNegative()) {
                throw new IllegalArgumentException("expiry must be positive, was " + expiry);
            }
            this.expiry = expiry;
            return this;
        }

        /**
         * Whether Locker renews each lease in the background until its unlock; on by default.
         * Off, a lease ends at its expiry unless {@link LockerLockRegistry#renewLock} extends it.
         *
         * @param on true to renew in the background
         * @return this builder
         */
        public Builder keepAlive(boolean on) {
            this.keepAlive = on;
            return this;
        }

        /**
         * The registry; a builder from a URI opens its locker here.
         *
         * @return the registry
         */
        public LockerLockRegistry build() {
            if (locker != null) {
                return new LockerLockRegistry(this, locker, false);
            }
            return new LockerLockRegistry(this, Lockers.open(uri), true);
        }
    }
}
