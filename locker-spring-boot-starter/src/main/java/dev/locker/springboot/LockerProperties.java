package dev.locker.springboot;

import dev.locker.api.LockerConfig;
import dev.locker.spi.UriOptions;
import org.springframework.boot.context.properties.ConfigurationProperties;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code locker.*} properties. Only {@code locker.uri} is required (without it no locker is configured); every
 * other option left unset keeps {@link LockerConfig}'s documented default, and options in the URI's query
 * ({@code redis://host:6379?expiry=30s}) override these.
 */
@ConfigurationProperties(prefix = "locker")
public class LockerProperties {

    /** The backend by URI: {@code mem:}, {@code redis://}, {@code rediss://}, {@code mongodb://}, {@code hbase://}. */
    private String uri;
    /**
     * How long a claim lives unless renewed: {@code 30s}, {@code 5m}, {@code 250ms}, {@code 1h}, ISO-8601
     * ({@code PT30S}). A bare number is refused (Spring would read {@code 300} as 300 ms), as in the URI's options.
     */
    private String expiry;
    /** Wait-and-read-back only: the pause between writing a claim and reading it back (a duration with a unit). */
    private String lockWait;
    /** Attempts to write a claim when the store is slow or fails temporarily. */
    private Integer retries;
    /**
     * How long a lock request waits for another transaction of this JVM holding the same lock (a duration with a
     * unit; 0: fail fast).
     */
    private String localWait;
    /** Whether dead claims met on the way are deleted. */
    private Boolean scrubExpired;
    /** Largest key + column in bytes, checked before any I/O. */
    private Integer maxKeyBytes;
    /** A readable name at the start of the locker's rid (e.g. the application's name); a random id is appended. */
    private String rid;
    /** Reason recorded with claims when the caller gives none. */
    private String why;
    /** Meters, when Micrometer and locker-micrometer are on the classpath and a MeterRegistry bean exists. */
    private final Metrics metrics = new Metrics();
    /** ShedLock's lock provider, when locker-shedlock and ShedLock are on the classpath. */
    private final ShedLock shedlock = new ShedLock();
    /** Spring Integration's lock registry, when locker-spring-integration and Spring Integration are on the classpath. */
    private final LockRegistry lockRegistry = new LockRegistry();

    /**
     * The locker configuration these properties describe.
     *
     * @return a builder holding every option that was set; the caller may add more (a probe)
     */
    public LockerConfig.Builder toConfig() {
        LockerConfig.Builder b = LockerConfig.builder();
        if (expiry != null) {
            b.expiry(duration("locker.expiry", expiry));
        }
        if (lockWait != null) {
            b.lockWait(duration("locker.lock-wait", lockWait));
        }
        if (retries != null) {
            b.retries(retries);
        }
        if (localWait != null) {
            b.localWait(duration("locker.local-wait", localWait));
        }
        if (scrubExpired != null) {
            b.scrubExpired(scrubExpired);
        }
        if (maxKeyBytes != null) {
            b.maxKeyBytes(maxKeyBytes);
        }
        if (rid != null && !rid.isEmpty()) {
            b.rid(rid);
        }
        if (why != null) {
            b.why(why);
        }
        return b;
    }

    /** A duration property, refusing a pasted inline comment with its own message rather than "not a duration". */
    private static Duration duration(String name, String value) {
        LockerStartupChecks.noInlineComment(name, value, true);
        return UriOptions.duration(name, value);
    }

    /** @return the backend URI */
    public String getUri() {
        return uri;
    }

    /** @param uri the backend URI */
    public void setUri(String uri) {
        this.uri = uri;
    }

    /** @return the claim expiry as written (a duration with a unit), or null for the default */
    public String getExpiry() {
        return expiry;
    }

    /** @param expiry the claim expiry: {@code 30s}, {@code 5m}, {@code 250ms}, {@code PT30S}; a bare number is refused */
    public void setExpiry(String expiry) {
        this.expiry = expiry;
    }

    /** @return the lock-wait as written, or null for the default */
    public String getLockWait() {
        return lockWait;
    }

    /** @param lockWait the lock-wait (a duration with a unit) */
    public void setLockWait(String lockWait) {
        this.lockWait = lockWait;
    }

    /** @return the retries, or null for the default */
    public Integer getRetries() {
        return retries;
    }

    /** @param retries the retries */
    public void setRetries(Integer retries) {
        this.retries = retries;
    }

    /** @return the local wait as written, or null for the default */
    public String getLocalWait() {
        return localWait;
    }

    /** @param localWait the local wait (a duration with a unit; 0 to fail fast) */
    public void setLocalWait(String localWait) {
        this.localWait = localWait;
    }

    /** @return whether expired claims are scrubbed, or null for the default */
    public Boolean getScrubExpired() {
        return scrubExpired;
    }

    /** @param scrubExpired whether expired claims are scrubbed */
    public void setScrubExpired(Boolean scrubExpired) {
        this.scrubExpired = scrubExpired;
    }

    /** @return the key size limit, or null for the default */
    public Integer getMaxKeyBytes() {
        return maxKeyBytes;
    }

    /** @param maxKeyBytes the key size limit */
    public void setMaxKeyBytes(Integer maxKeyBytes) {
        this.maxKeyBytes = maxKeyBytes;
    }

    /** @return the rid name, or null for a random rid */
    public String getRid() {
        return rid;
    }

    /** @param rid the rid name */
    public void setRid(String rid) {
        this.rid = rid;
    }

    /** @return the default reason, or null for the default */
    public String getWhy() {
        return why;
    }

    /** @param why the default reason */
    public void setWhy(String why) {
        this.why = why;
    }

    /** @return the meter options */
    public Metrics getMetrics() {
        return metrics;
    }

    /** @return the ShedLock options */
    public ShedLock getShedlock() {
        return shedlock;
    }

    /** @return the {@code locker.lock-registry.*} properties */
    public LockRegistry getLockRegistry() {
        return lockRegistry;
    }

    /** The {@code locker.metrics.*} properties. */
    public static class Metrics {
        /** Whether the locker is metered when Micrometer is present. */
        private boolean enabled = true;
        /** Key prefixes that tag per-lock meters with {@code lock.prefix} (others are {@code other}); none: no such tag. */
        private List<String> lockNamePrefixes = new ArrayList<>();

        /** @return whether the locker is metered */
        public boolean isEnabled() {
            return enabled;
        }

        /** @param enabled whether the locker is metered */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** @return the lock-name prefixes that become tag values */
        public List<String> getLockNamePrefixes() {
            return lockNamePrefixes;
        }

        /** @param lockNamePrefixes the lock-name prefixes that become tag values */
        public void setLockNamePrefixes(List<String> lockNamePrefixes) {
            this.lockNamePrefixes = lockNamePrefixes;
        }
    }

    /** The {@code locker.shedlock.*} properties. */
    public static class ShedLock {
        /** Whether ShedLock gets a lock provider over the locker, when the application defines none. */
        private boolean enabled = true;
        /** Put before every ShedLock lock name; {@code locker list shedlock:} then shows who runs which task. */
        private String keyPrefix = "shedlock:";

        /** @return whether the provider is configured */
        public boolean isEnabled() {
            return enabled;
        }

        /** @param enabled whether the provider is configured */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** @return the key prefix of ShedLock's locks */
        public String getKeyPrefix() {
            return keyPrefix;
        }

        /** @param keyPrefix the key prefix of ShedLock's locks; may be empty */
        public void setKeyPrefix(String keyPrefix) {
            this.keyPrefix = keyPrefix;
        }
    }

    /** The {@code locker.lock-registry.*} properties. */
    public static class LockRegistry {
        /** Whether Spring Integration gets a lock registry over the locker, when the application defines none. */
        private boolean enabled = true;
        /** Put before every registry key; {@code locker list registry:} then shows who holds which key. */
        private String keyPrefix = "registry:";

        /** @return whether the registry is configured */
        public boolean isEnabled() {
            return enabled;
        }

        /** @param enabled whether the registry is configured */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** @return the key prefix of the registry's locks */
        public String getKeyPrefix() {
            return keyPrefix;
        }

        /** @param keyPrefix the key prefix of the registry's locks; may be empty */
        public void setKeyPrefix(String keyPrefix) {
            this.keyPrefix = keyPrefix;
        }
    }
}
