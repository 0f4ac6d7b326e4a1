package dev.locker.micrometer;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockLost;
import dev.locker.api.LockProbe;
import dev.locker.api.LockingException;
import dev.locker.api.ExpiredLockException;
import dev.locker.api.LossReason;
import io.micrometer.core.instrument.Clock;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A locker's meters, fed by its {@link LockProbe}: install it before the locker opens, and every backend step, grant,
 * loss and bounded wait of that locker is counted.
 *
 * <pre>{@code
 * LockerMetrics metrics = LockerMetrics.builder(registry).backend("redis").lockNamePrefixes("orders:", "jobs:").build();
 * Locker locker = Lockers.open(uri, LockerConfig.builder().probe(metrics).build());
 * }</pre>
 *
 * <table>
 *   <caption>meters (every one tagged {@code backend}, plus the fixed tags given to the builder)</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th><th>what</th></tr>
 *   <tr><td>{@code locker.acquire}</td><td>timer</td><td>{@code lock.prefix}*</td><td>time to acquire: from the claim
 *       write to the grant (the write on atomic backends, the read-back on wait-and-read-back)</td></tr>
 *   <tr><td>{@code locker.held}</td><td>timer</td><td>{@code lock.prefix}*, {@code end} = released | lost</td>
 *       <td>time held: from the grant to the release or the loss</td></tr>
 *   <tr><td>{@code locker.contention}</td><td>counter</td><td>{@code lock.prefix}*, {@code step}</td><td>refusals
 *       because another claim holds the lock (in-process contention fails before any backend step: not counted)</td></tr>
 *   <tr><td>{@code locker.wait}</td><td>timer</td><td>{@code lock.prefix}*, {@code outcome} = acquired | busy |
 *       unreachable | refused</td><td>bounded waits ({@code acquireWithin}, {@code tryAcquire}, {@code tryAcquireAll})
 *       by how they ended, with their duration</td></tr>
 *   <tr><td>{@code locker.renewals}</td><td>counter</td><td>{@code lock.prefix}*, {@code outcome} = renewed | lost |
 *       temporary | permanent</td><td>renewals (the keep-alive's and explicit ones) and how they failed</td></tr>
 *   <tr><td>{@code locker.lost}</td><td>counter</td><td>{@code lock.prefix}*, {@code reason} = taken_over | gone |
 *       expired | locker_closed</td><td>claims lost, by {@link LossReason}</td></tr>
 *   <tr><td>{@code locker.errors}</td><td>counter</td><td>{@code step}, {@code kind} = temporary | permanent</td>
 *       <td>backend failures (not contention, not a loss) by step and by whether a retry may succeed</td></tr>
 * </table>
 * <p>* {@code lock.prefix} only when {@link Builder#lockNamePrefixes} was given: the first configured prefix the lock's
 * key starts with, else {@code other}. Its cardinality is the number of prefixes plus one, whatever names the
 * application locks: a lock name never becomes a tag value by itself.
 *
 * <p>Cost on the lock path: the meters are registered when this object is built; a step then costs a few array
 * reads, a monotonic clock reading and a lock-free counter or timer update, plus one concurrent-map entry per claimed
 * lock (to time it). Nothing blocks, allocates per meter or does I/O. Like every probe it never throws.
 *
 * <p>One instance may serve several lockers (entries are keyed by rid and lock); their meters then add up under the
 * same tags. Give lockers their own tags ({@link Builder#tag}) to tell them apart.
 */
public final class LockerMetrics implements LockProbe {

    private static final LockProbe.Step[] STEPS = LockProbe.Step.values();
    private static final Acquisition.Outcome[] OUTCOMES = Acquisition.Outcome.values();
    private static final LossReason[] REASONS = LossReason.values();
    private static final String[] RENEW_OUTCOMES = {"renewed", "lost", "temporary", "permanent"};
    private static final int RENEWED = 0;
    private static final int RENEW_LOST = 1;
    private static final int TEMPORARY = 0;
    private static final int PERMANENT = 1;

    private final Clock clock;
    private final byte[][] prefixes;
    /** Per prefix slot (the last slot is "other", or the only slot without prefixes): the meters. */
    private final Timer[] acquire;
    private final Timer[] heldReleased;
    private final Timer[] heldLost;
    private final Counter[][] contention; // [slot][step]
    private final Timer[][] waits;        // [slot][outcome]
    private final Counter[][] renewals;   // [slot][renew outcome]
    private final Counter[][] lost;       // [slot][reason]
    private final Counter[][] errors;     // [step][kind]

    /** What this probe remembers of a claim while it is claimed: when its write started, and when it was granted. */
    private static final class Claim {
        final long writeStart;
        volatile long grantedAt = -1;

        Claim(long writeStart) {
            this.writeStart = writeStart;
        }
    }

    private record ClaimKey(String rid, KeyColumn lock) {
    }

    private final ConcurrentHashMap<ClaimKey, Claim> claims = new ConcurrentHashMap<>();

    private LockerMetrics(Builder b) {
        this.clock = b.registry.config().clock();
        this.prefixes = new byte[b.prefixes.size()][];
        for (int i = 0; i < prefixes.length; i++) {
            prefixes[i] = b.prefixes.get(i).getBytes(StandardCharsets.UTF_8);
        }
        int slots = prefixes.length + 1;
        Tags base = b.tags.and("backend", b.backend);
        acquire = new Timer[slots];
        heldReleased = new Timer[slots];
        heldLost = new Timer[slots];
        contention = new Counter[slots][STEPS.length];
        waits = new Timer[slots][OUTCOMES.length];
        renewals = new Counter[slots][RENEW_OUTCOMES.length];
        lost = new Counter[slots][REASONS.length];
        MeterRegistry r = b.registry;
        for (int slot = 0; slot < slots; slot++) {
            Tags t = prefixes.length == 0 ? base
                    : base.and("lock.prefix", slot < prefixes.length ? b.prefixes.get(slot) : "other");
            acquire[slot] = Timer.builder("locker.acquire").description("Time to acquire a lock: claim write to grant")
                    .tags(t).register(r);
            heldReleased[slot] = Timer.builder("locker.held").description("Time a lock was held, grant to release or loss")
                    .tags(t).tag("end", "released").register(r);
            heldLost[slot] = Timer.builder("locker.held").description("Time a lock was held, grant to release or loss")
                    .tags(t).tag("end", "lost").register(r);
            for (LockProbe.Step step : STEPS) {
                if (step == Step.WRITE || step == Step.CHECK || step == Step.VERIFY) {
                    contention[slot][step.ordinal()] = Counter.builder("locker.contention")
                            .description("Refusals because another claim holds the lock")
                            .tags(t).tag("step", lower(step)).register(r);
                }
            }
            for (Acquisition.Outcome o : OUTCOMES) {
                waits[slot][o.ordinal()] = Timer.builder("locker.wait").description("Bounded waits for a lock, by outcome")
                        .tags(t).tag("outcome", lower(o)).register(r);
            }
            for (int i = 0; i < RENEW_OUTCOMES.length; i++) {
                renewals[slot][i] = Counter.builder("locker.renewals").description("Renewals of held locks, by outcome")
                        .tags(t).tag("outcome", RENEW_OUTCOMES[i]).register(r);
            }
            for (LossReason reason : REASONS) {
                lost[slot][reason.ordinal()] = Counter.builder("locker.lost").description("Locks lost, by reason")
                        .tags(t).tag("reason", lower(reason)).register(r);
            }
        }
        errors = new Counter[STEPS.length][2];
        for (LockProbe.Step step : STEPS) {
            errors[step.ordinal()][TEMPORARY] = Counter.builder("locker.errors").description("Backend failures, by step and kind")
                    .tags(base).tag("step", lower(step)).tag("kind", "temporary").register(r);
            errors[step.ordinal()][PERMANENT] = Counter.builder("locker.errors").description("Backend failures, by step and kind")
                    .tags(base).tag("step", lower(step)).tag("kind", "permanent").register(r);
        }
    }

    /**
     * A builder for the meters of one locker (or several that should add up) in {@code registry}.
     *
     * @param registry where the meters are registered
     * @return a builder; {@link Builder#backend} should be set
     */
    public static Builder builder(MeterRegistry registry) {
        return new Builder(registry);
    }

    /**
     * The meters of a locker opened from {@code uri}, tagged with its scheme as the backend ({@code redis}, {@code mem},
     * ...), without lock-name prefixes.
     *
     * @param registry where the meters are registered
     * @param uri      the locker's URI; only its scheme is read (never its credentials)
     * @return the probe to install in the locker's configuration
     */
    public static LockerMetrics forUri(MeterRegistry registry, String uri) {
        return builder(registry).backend(schemeOf(uri)).build();
    }

    /**
     * The scheme of a locker URI, lower case, as the {@code backend} tag: {@code redis} for {@code redis://...}.
     *
     * @param uri a locker URI
     * @return its scheme, or {@code unknown} when it has none
     */
    public static String schemeOf(String uri) {
        int colon = uri == null ? -1 : uri.indexOf(':');
        return colon <= 0 ? "unknown" : uri.substring(0, colon).toLowerCase(Locale.ROOT);
    }

    // ---- the probe --------------------------------------------------------------------------------------------

    @Override
    public void before(Step step, KeyColumn lock, String rid) {
        if (step == Step.WRITE) {
            claims.put(new ClaimKey(rid, lock), new Claim(clock.monotonicTime()));
        } else if (step == Step.RELEASE) {
            Claim c = claims.remove(new ClaimKey(rid, lock));
            if (c != null && c.grantedAt >= 0) {
                heldReleased[slot(lock)].record(clock.monotonicTime() - c.grantedAt, TimeUnit.NANOSECONDS);
            }
        }
    }

    @Override
    public void after(Step step, KeyColumn lock, String rid, RuntimeException failure) {
        if (step == Step.RENEW) {
            renewals[slot(lock)][failure == null ? RENEWED
                    : failure instanceof ExpiredLockException ? RENEW_LOST
                    : 2 + kind(failure)].increment();
        }
        if (failure == null) {
            return;
        }
        if (step == Step.WRITE) {
            claims.remove(new ClaimKey(rid, lock)); // no claim left: the backend withdrew it, or never wrote it
        }
        if (failure instanceof ExpiredLockException) {
            return; // a loss: counted once by lost()
        }
        if (failure instanceof LockingException && ((LockingException) failure).holder() != null
                && ((LockingException) failure).isTemporary() && contention[0][step.ordinal()] != null) {
            contention[slot(lock)][step.ordinal()].increment();
            return;
        }
        errors[step.ordinal()][kind(failure)].increment();
    }

    @Override
    public void acquired(KeyColumn lock, String rid) {
        Claim c = claims.get(new ClaimKey(rid, lock));
        if (c != null && c.grantedAt < 0) {
            long now = clock.monotonicTime();
            c.grantedAt = now;
            acquire[slot(lock)].record(now - c.writeStart, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void lost(LockLost loss, String rid) {
        int slot = slot(loss.lock());
        lost[slot][loss.reason().ordinal()].increment();
        Claim c = claims.remove(new ClaimKey(rid, loss.lock()));
        if (c != null && c.grantedAt >= 0) {
            heldLost[slot].record(clock.monotonicTime() - c.grantedAt, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void waited(Acquisition acquisition, String rid) {
        KeyColumn lock = acquisition.lease().map(l -> l.lock())
                .orElseGet(() -> acquisition.failure().map(LockingException::lock).orElse(null));
        waits[lock == null ? prefixes.length : slot(lock)][acquisition.outcome().ordinal()]
                .record(acquisition.waited().toNanos(), TimeUnit.NANOSECONDS);
    }

    /** How many claims this probe is timing now (claimed and not yet released or lost); for tests and gauges. */
    int claimsInFlight() {
        return claims.size();
    }

    // ---- helpers ----------------------------------------------------------------------------------------------

    private int slot(KeyColumn lock) {
        for (int i = 0; i < prefixes.length; i++) {
            if (lock.keyStartsWith(prefixes[i])) {
                return i;
            }
        }
        return prefixes.length;
    }

    private static int kind(RuntimeException failure) {
        return failure instanceof LockingException && ((LockingException) failure).isTemporary() ? TEMPORARY : PERMANENT;
    }

    private static String lower(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT);
    }

    @Override
    public String toString() {
        return "LockerMetrics[" + claims.size() + " claim(s) timed]";
    }

    /** Options of {@link LockerMetrics}; validated when set. */
    public static final class Builder {
        private final MeterRegistry registry;
        private String backend = "unknown";
        private Tags tags = Tags.empty();
        private final List<String> prefixes = new ArrayList<>();

        private Builder(MeterRegistry registry) {
            this.registry = Objects.requireNonNull(registry, "registry must not be null");
        }

        /**
         * The {@code backend} tag: the URI scheme ({@code redis}, {@code mongodb}, {@code hbase}, {@code mem}).
         *
         * @param name the backend's name; not blank
         * @return this builder
         */
        public Builder backend(String name) {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException("backend must not be blank");
            }
            this.backend = name;
            return this;
        }

        /**
         * A fixed tag on every meter (e.g. {@code locker=orders} when a process runs several lockers).
         *
         * @param key   the tag's key
         * @param value the tag's value
         * @return this builder
         */
        public Builder tag(String key, String value) {
            this.tags = tags.and(Tag.of(key, value));
            return this;
        }

        /**
         * Tags the per-lock meters with {@code lock.prefix}: the first of these prefixes the lock's key starts with
         * (compared as UTF-8 bytes), else {@code other}. Opt-in; the tag has at most {@code prefixes.size() + 1}
         * values. List a longer prefix before a shorter one it extends.
         *
         * @param prefixes key prefixes, not empty, not repeated, at most 64
         * @return this builder
         */
        public Builder lockNamePrefixes(Collection<String> prefixes) {
            Objects.requireNonNull(prefixes, "prefixes must not be null");
            if (prefixes.size() > 64) {
                throw new IllegalArgumentException("at most 64 lock-name prefixes (each is a tag value), got " + prefixes.size());
            }
            List<String> out = new ArrayList<>();
            for (String p : prefixes) {
                if (p == null || p.isEmpty()) {
                    throw new IllegalArgumentException("a lock-name prefix must not be null or empty");
                }
                if (p.equals("other") || out.contains(p)) {
                    throw new IllegalArgumentException("lock-name prefix '" + p + "' is repeated or reserved ('other')");
                }
                out.add(p);
            }
            this.prefixes.clear();
            this.prefixes.addAll(out);
            return this;
        }

        /**
         * Like {@link #lockNamePrefixes(Collection)}.
         *
         * @param prefixes key prefixes
         * @return this builder
         */
        public Builder lockNamePrefixes(String... prefixes) {
            return lockNamePrefixes(java.util.Arrays.asList(prefixes));
        }

        /**
         * Registers the meters.
         *
         * @return the probe to install with {@code LockerConfig.builder().probe(...)}
         */
        public LockerMetrics build() {
            return new LockerMetrics(this);
        }
    }
}
