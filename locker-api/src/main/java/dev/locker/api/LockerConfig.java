package dev.locker.api;

import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Objects;

/**
 * Settings shared by every locker. Build with {@link #builder()}; every option has a safe default, documented here
 * and in the README:
 *
 * <table>
 *   <caption>defaults</caption>
 *   <tr><td>expiry</td><td>60 s</td><td>how long a claim lives unless renewed; at most {@link #MAX_EXPIRY} (100
 *       years)</td></tr>
 *   <tr><td>lockWait</td><td>100 ms</td><td>wait-and-read-back only: the pause between writing a claim and reading
 *       the row back; must exceed the clock disagreement between clients</td></tr>
 *   <tr><td>retries</td><td>3</td><td>attempts to write a claim when the store is slow or fails temporarily</td></tr>
 *   <tr><td>localWait</td><td>0 (fail fast)</td><td>how long writeLock waits for another transaction of this JVM
 *       that holds the same lock; zero fails at once, like JanusGraph</td></tr>
 *   <tr><td>scrubExpired</td><td>true</td><td>delete dead claims met on the way</td></tr>
 *   <tr><td>maxKeyBytes</td><td>4096</td><td>largest key + column, checked before any I/O</td></tr>
 *   <tr><td>rid</td><td>random</td><td>the locker instance's identity: an optional readable name, then a random
 *       instance id that every locker draws afresh, so two lockers never share a rid</td></tr>
 *   <tr><td>host, pid</td><td>this host and process</td><td>shown to operators, never used for ownership</td></tr>
 *   <tr><td>why</td><td>""</td><td>default reason recorded with claims, when the transaction gives none</td></tr>
 *   <tr><td>timeSource</td><td>system clock</td><td>wall clock, monotonic clock and sleep</td></tr>
 *   <tr><td>probe</td><td>none</td><td>observes (and in tests pauses) every backend step</td></tr>
 * </table>
 */
public final class LockerConfig {

    /**
     * The longest expiry: 100 years (36,525 days). Every backend counts a claim's expiry, and the time it ends, exactly
     * up to it (Redis's scripts in server microseconds held in doubles, MongoDB and the claims of wait-and-read-back in
     * milliseconds since 1970, HBase in cell TTLs, the holder's own deadline in monotonic nanoseconds); far beyond it
     * that arithmetic overflows, which once let a second locker be granted a held lock.
     */
    public static final Duration MAX_EXPIRY = Duration.ofDays(36_525);

    private static final SecureRandom RANDOM = new SecureRandom();

    private final Duration expiry;
    private final Duration lockWait;
    private final int retries;
    private final Duration localWait;
    private final boolean scrubExpired;
    private final int maxKeyBytes;
    private final String ridName;
    private final String rid;
    private final String host;
    private final long pid;
    private final String why;
    private final TimeSource timeSource;
    private final LockProbe probe;
    private final LocalArbitration localArbitration;
    /** The owner each thread built last (see {@link #owner}); per thread, so threads do not contend on it. */
    private final ThreadLocal<LockOwner> lastOwner = new ThreadLocal<>();

    private LockerConfig(Builder b) {
        this.expiry = b.expiry;
        this.lockWait = b.lockWait;
        this.retries = b.retries;
        this.localWait = b.localWait;
        this.scrubExpired = b.scrubExpired;
        this.maxKeyBytes = b.maxKeyBytes;
        this.ridName = b.rid;
        this.rid = instanceRid(b.rid);
        this.host = b.host != null ? b.host : localHost();
        this.pid = b.pid != null ? b.pid : ProcessHandle.current().pid();
        this.why = b.why;
        this.timeSource = b.timeSource;
        this.probe = b.probe;
        this.localArbitration = b.localArbitration;
    }

    /** {@return a builder holding every default} */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * All defaults, with a fresh random rid.
     *
     * @return all defaults, with a fresh random rid
     */
    public static LockerConfig defaults() {
        return builder().build();
    }

    /**
     * This configuration for a new locker instance: the same settings and rid name, a fresh instance id. Every locker
     * calls it when it is built, so one configuration given to two lockers makes two owners (two lockers sharing a
     * rid would be one owner to the backend and could both believe they hold a lock).
     *
     * @return this configuration for a new locker instance: the same settings and rid name, a fresh instance id
     */
    public LockerConfig forNewInstance() {
        return toBuilder().build();
    }

    /**
     * A builder holding this configuration's values and rid name; what it builds draws a fresh instance id.
     *
     * @return a builder holding this configuration's values and rid name; what it builds draws a fresh instance id
     */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.expiry = expiry;
        b.lockWait = lockWait;
        b.retries = retries;
        b.localWait = localWait;
        b.scrubExpired = scrubExpired;
        b.maxKeyBytes = maxKeyBytes;
        b.rid = ridName;
        b.host = host;
        b.pid = pid;
        b.why = why;
        b.timeSource = timeSource;
        b.probe = probe;
        b.localArbitration = localArbitration;
        return b;
    }

    private static String instanceRid(String name) {
        if (name == null) {
            return randomRid();
        }
        byte[] b = new byte[8];
        RANDOM.nextBytes(b);
        return name + "-" + HexFormat.of().formatHex(b);
    }

    /**
     * A rid nobody else has: 128 random bits, hex. Host and pid are kept apart, for display only.
     *
     * @return a rid nobody else has: 128 random bits, hex
     */
    public static String randomRid() {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    private static String localHost() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            String name = ManagementFactory.getRuntimeMXBean().getName();
            int at = name.indexOf('@');
            return at >= 0 ? name.substring(at + 1) : "unknown-host";
        }
    }

    /** {@return how long a claim lives unless renewed} */
    public Duration expiry() {
        return expiry;
    }

    /** {@return the wait-and-read-back pause between writing a claim and reading the row back} */
    public Duration lockWait() {
        return lockWait;
    }

    /** {@return how many attempts a claim write gets when the store is slow or fails temporarily} */
    public int retries() {
        return retries;
    }

    /** {@return how long a lock request waits for another transaction of this JVM (zero: fail fast)} */
    public Duration localWait() {
        return localWait;
    }

    /** {@return whether dead claims met on the way are deleted} */
    public boolean scrubExpired() {
        return scrubExpired;
    }

    /** {@return the largest key + column in bytes} */
    public int maxKeyBytes() {
        return maxKeyBytes;
    }

    /**
     * The readable name the rid starts with, or null when the rid is only random (see {@link Builder#rid}).
     *
     * @return the readable name the rid starts with, or null when the rid is only random (see {@link Builder#rid})
     */
    public String ridName() {
        return ridName;
    }

    /**
     * The rid of the locker running with this configuration: the rid name (if any), then an instance id drawn when
     * the configuration was built. A locker always runs with {@link #forNewInstance()} of the configuration it was
     * given, so {@code locker.rid()} is unique to it; ownership is decided on it alone.
     *
     * @return the rid of the locker running with this configuration: the rid name (if any), then an instance id drawn
     * when the configuration was built
     */
    public String rid() {
        return rid;
    }

    /** {@return the host name recorded with claims (display only)} */
    public String host() {
        return host;
    }

    /** {@return the process id recorded with claims (display only)} */
    public long pid() {
        return pid;
    }

    /** {@return the reason recorded with claims when the transaction gives none} */
    public String why() {
        return why;
    }

    /** {@return the wall clock, monotonic clock and sleep every component uses} */
    public TimeSource timeSource() {
        return timeSource;
    }

    /** {@return the probe that observes every backend step} */
    public LockProbe probe() {
        return probe;
    }

    /**
     * The arbitration to share with other lockers of this process, or null for one of the locker's own.
     *
     * @return the arbitration to share with other lockers of this process, or null for one of the locker's own
     */
    public LocalArbitration localArbitration() {
        return localArbitration;
    }

    /**
     * The owner metadata a claim written now, by the current thread, for {@code reason} carries.
     *
     * @param reason why the claim was lost
     * @return the owner metadata a claim written now, by the current thread, for {@code reason} carries
     */
    public LockOwner owner(String reason) {
        String thread = Thread.currentThread().getName();
        String w = reason == null || reason.isEmpty() ? why : reason;
        // the owner is immutable and compared by content: the one this thread built last serves again while its
        // thread name and reason are the same (an acquire builds none, and its encoding is kept: LockOwner#toBytes)
        LockOwner last = lastOwner.get();
        if (last != null && last.thread().equals(thread) && last.why().equals(w)) {
            return last;
        }
        LockOwner made = new LockOwner(rid, host, pid, thread, w, null);
        lastOwner.set(made);
        return made;
    }

    /**
     * Checks a lock name against this configuration before any I/O.
     *
     * @param lock the lock
     * @throws IllegalArgumentException naming the lock when it is null or larger than {@link #maxKeyBytes()}
     * @return checks a lock name against this configuration before any I/O
     */
    public KeyColumn validate(KeyColumn lock) {
        if (lock == null) {
            throw new IllegalArgumentException("lock must not be null");
        }
        if (lock.size() > maxKeyBytes) {
            throw new IllegalArgumentException("lock " + lock + " is " + lock.size()
                    + " bytes (key + column); the limit is maxKeyBytes=" + maxKeyBytes);
        }
        return lock;
    }

    @Override
    public String toString() {
        return "LockerConfig{expiry=" + expiry + ", lockWait=" + lockWait + ", retries=" + retries
                + ", localWait=" + localWait + ", scrubExpired=" + scrubExpired + ", maxKeyBytes=" + maxKeyBytes
                + ", rid=" + rid + ", host=" + host + ", pid=" + pid + ", why=\"" + why + "\", time=" + timeSource + "}";
    }

    /** Builder with the documented defaults; every setter validates its argument at once. */
    public static final class Builder {
        private Duration expiry = Duration.ofSeconds(60);
        private Duration lockWait = Duration.ofMillis(100);
        private int retries = 3;
        private Duration localWait = Duration.ZERO;
        private boolean scrubExpired = true;
        private int maxKeyBytes = 4096;
        private String rid;
        private String host;
        private Long pid;
        private String why = "";
        private TimeSource timeSource = TimeSource.system();
        private LockProbe probe = LockProbe.NONE;
        private LocalArbitration localArbitration;

        private Builder() {
        }

        /**
         * How long a claim lives unless renewed; default 60 s.
         *
         * @param d how long a claim lives unless renewed; positive, at most {@link #MAX_EXPIRY} (100 years)
         * @return this builder
         * @throws IllegalArgumentException naming the expiry when it is not positive or longer than 100 years
         */
        public Builder expiry(Duration d) {
            positive(d, "expiry");
            if (d.compareTo(MAX_EXPIRY) > 0) {
                // no backend counts it exactly (see MAX_EXPIRY): refused here, before any locker opens or any I/O
                throw new IllegalArgumentException("expiry must be at most 100 years (" + MAX_EXPIRY.toDays()
                        + " days), was " + d + " (" + d.toDays() + " days)");
            }
            this.expiry = d;
            return this;
        }

        /**
         * Wait-and-read-back only: the pause between writing a claim and reading the row back; must exceed the clock
             * disagreement between clients. Default 100 ms.
         *
         * @param d the pause; zero or positive
         * @return this builder
         */
        public Builder lockWait(Duration d) {
            this.lockWait = nonNegative(d, "lockWait");
            return this;
        }

        /**
         * Attempts to write a claim when the store is slow or fails temporarily; default 3.
         *
         * @param n at least 1
         * @return attempts to write a claim when the store is slow or fails temporarily; default 3
         */
        public Builder retries(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("retries must be at least 1, was " + n);
            }
            this.retries = n;
            return this;
        }

        /**
         * Wait up to {@code d} for another transaction of this JVM holding the same lock; zero fails fast.
         *
         * @param d how long to wait; zero fails fast
         * @return this builder
         */
        public Builder localWait(Duration d) {
            this.localWait = nonNegative(d, "localWait");
            return this;
        }

        /**
         * Whether dead claims met on the way are deleted; default true.
         *
         * @param on true to turn it on, false to turn it off
         * @return this builder
         */
        public Builder scrubExpired(boolean on) {
            this.scrubExpired = on;
            return this;
        }

        /**
         * The largest key + column in bytes, checked before any I/O; default 4096.
         *
         * @param n at least 1
         * @return this builder
         */
        public Builder maxKeyBytes(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("maxKeyBytes must be positive, was " + n);
            }
            this.maxKeyBytes = n;
            return this;
        }

        /**
         * A readable name at the start of the rid (e.g. the host or service): operators see it. Each locker appends an
         * instance id of its own, so the name need not be unique. Default: no name, 128 random bits.
         *
         * @param name the readable name: 1..96 characters, no control characters
         * @return this builder
         */
        public Builder rid(String name) {
            Objects.requireNonNull(name, "rid must not be null");
            if (name.isEmpty() || name.length() > 96) {
                throw new IllegalArgumentException("rid must be 1..96 characters, was " + name.length());
            }
            for (int i = 0; i < name.length(); i++) {
                if (Character.isISOControl(name.charAt(i))) {
                    throw new IllegalArgumentException("rid must not contain control characters (at index " + i + ")");
                }
            }
            this.rid = name;
            return this;
        }

        /**
         * The host name recorded with claims; default this host's name.
         *
         * @param h the host name; not null
         * @return this builder
         */
        public Builder host(String h) {
            this.host = Objects.requireNonNull(h, "host must not be null");
            return this;
        }

        /**
         * The process id recorded with claims; default this process's.
         *
         * @param p the process id
         * @return this builder
         */
        public Builder pid(long p) {
            this.pid = p;
            return this;
        }

        /**
         * The reason recorded with claims when the transaction gives none; default empty.
         *
         * @param w the reason; not null (empty for none)
         * @return this builder
         */
        public Builder why(String w) {
            this.why = Objects.requireNonNull(w, "why must not be null");
            return this;
        }

        /**
         * The clocks every component uses; default the system's (tests give a virtual clock).
         *
         * @param t the clocks; not null
         * @return this builder
         */
        public Builder timeSource(TimeSource t) {
            this.timeSource = Objects.requireNonNull(t, "timeSource must not be null");
            return this;
        }

        /**
         * Observes every backend step (tests pause chosen steps with it); default {@link LockProbe#NONE}.
         *
         * @param p the probe; not null
         * @return this builder
         */
        public Builder probe(LockProbe p) {
            this.probe = Objects.requireNonNull(p, "probe must not be null");
            return this;
        }

        /**
         * Shares the in-process arbitration of another locker ({@link Locker#arbitration()}); default: its own.
         *
         * @param a the arbitration, or null for the locker's own
         * @return this builder
         */
        public Builder localArbitration(LocalArbitration a) {
            this.localArbitration = a;
            return this;
        }

        /** {@return the configuration, with a fresh instance id in its rid} */
        public LockerConfig build() {
            return new LockerConfig(this);
        }

        private static Duration positive(Duration d, String name) {
            Objects.requireNonNull(d, name + " must not be null");
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " must be positive, was " + d);
            }
            return d;
        }

        private static Duration nonNegative(Duration d, String name) {
            Objects.requireNonNull(d, name + " must not be null");
            if (d.isNegative()) {
                throw new IllegalArgumentException(name + " must not be negative, was " + d);
            }
            return d;
        }
    }
}
