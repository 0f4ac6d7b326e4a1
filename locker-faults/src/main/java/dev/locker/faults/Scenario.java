package dev.locker.faults;

/**
 * One fault, injected into a run of worker JVMs contending for locks. Each applies on every backend where it makes
 * sense ({@link Backend#inapplicable} says why not elsewhere).
 */
public enum Scenario {
    /** SIGKILL of a worker right after it was granted a lock. */
    KILL_HOLDING("SIGKILL holder while holding"),
    /** SIGKILL of a worker while it waits for a lock another holds. */
    KILL_WAITING("SIGKILL worker while waiting"),
    /** SIGKILL of a holder inside its release step (the worker's probe lingers there). */
    KILL_RELEASING("SIGKILL holder while releasing"),
    /** SIGSTOP of the holder for twice the expiry, then SIGCONT. */
    STOP_HOLDER("SIGSTOP holder for 2x expiry"),
    /** The holder's connection to the server frozen (a proxy forwards nothing) for twice the expiry. */
    FREEZE_CONNECTION("frozen connection of the holder for 2x expiry"),
    /** The server killed while a lock is held and started again, without persistence. */
    SERVER_RESTART("server SIGKILL + restart, no persistence"),
    /** The server killed while a lock is held and started again with {@code appendonly yes, appendfsync always}. */
    SERVER_RESTART_AOF("server SIGKILL + restart, AOF appendfsync always"),
    /** The server paused (SIGSTOP) for twice the expiry while a lock is held. */
    SERVER_PAUSE("server SIGSTOP for 2x expiry"),
    /** One worker's wall clock behind by more than the expiry, another's ahead (libfaketime), from their start. */
    CLOCK_SKEW("wall clocks skewed -/+ beyond expiry"),
    /** The holder's wall clock jumps (forward, then on a later holder backward) by more than the expiry while it holds. */
    CLOCK_JUMP("wall-clock jump on the holder"),
    /** Many short locks under contention: 4 workers, 2 locks, no hold time. */
    CONTENTION("4 workers x N short cycles"),
    /** The region server hosting the lock table aborts while a lock is held. */
    REGION_SERVER_ABORT("region server abort"),
    /**
     * A Redis master with one replica, lockers with {@code replicas=1}: the master SIGKILLed under a held lock, the
     * replica promoted ({@code REPLICAOF NO ONE}), the workers' forwarder switched to it, the old master back as its
     * replica. The servers' clocks agree.
     */
    REDIS_FAILOVER("Redis master SIGKILL, replica promoted (replicas=1)"),
    /**
     * Control: {@link #REDIS_FAILOVER} with the replica's wall clock ahead by 30 s, beyond the lockers' stated bound:
     * the promoted replica expires the held claim at once and grants the lock again. Must be flagged.
     */
    REDIS_FAILOVER_CLOCK_AHEAD("CONTROL: Redis failover to a replica whose clock is 30 s ahead"),
    /**
     * {@link #REDIS_FAILOVER} with the replica's wall clock ahead by 1 s, and the lockers told
     * {@code serverClockSkew=1200ms}: within the bound, the failover keeps one holder at a time.
     */
    REDIS_FAILOVER_CLOCK_WITHIN_BOUND("Redis failover to a replica 1 s ahead, serverClockSkew=1200ms"),
    /** A real Redis Cluster (3 masters): the lock's slot migrated to another master while workers contend on it. */
    REDIS_SLOT_MIGRATION("Redis Cluster slot migrated under contention"),
    /**
     * Two groups of workers with expiries 5 s and 500 ms on one Redis without persistence, each locker's restart guard
     * at the longest expiry: the server SIGKILLed and started empty while a long-expiry worker holds.
     */
    MIXED_EXPIRY_RESTART("Redis restart, no persistence, expiries 5 s and 500 ms mixed"),
    /**
     * file: a holder closes its lease on an interrupted thread and contends no more (its JVM stays up): a waiter must be
     * granted at once, not after the expiry (10 s here). A liveness check.
     */
    FILE_INTERRUPTED_CLOSE("file: lease closed on an interrupted thread, holder quits"),
    /**
     * Control: the server restarted without persistence while the restart guard is off and the holder does not renew:
     * the next contender is granted the lock while the holder's lease is still valid. Must be flagged.
     */
    CONTROL_NO_GUARD("CONTROL: restart, no persistence, restartGuard=0");

    private final String title;

    Scenario(String title) {
        this.title = title;
    }

    /**
     * A short description for reports.
     *
     * @return the description
     */
    public String title() {
        return title;
    }

    /**
     * Why this scenario does not apply to {@code backend}, when it is written for one backend only; else null.
     *
     * @param backend a backend's name
     * @return the reason, or null
     */
    public String onlyOn(String backend) {
        String only = switch (this) {
            case REDIS_FAILOVER, REDIS_FAILOVER_CLOCK_AHEAD, REDIS_FAILOVER_CLOCK_WITHIN_BOUND, REDIS_SLOT_MIGRATION,
                 MIXED_EXPIRY_RESTART -> "redis";
            case FILE_INTERRUPTED_CLOSE -> "file";
            default -> null;
        };
        return only == null || only.equals(backend) ? null : (only.equals("redis") ? "Redis" : "file:") + " only";
    }

    /**
     * Whether only the long profile runs this scenario (unless named in {@code -Dfaults.scenarios}): each costs a
     * run of 20-30 s, and the short profile grows by at most about 40 s.
     *
     * @return true for the heavier variants
     */
    public boolean longOnly() {
        return this == REDIS_FAILOVER_CLOCK_AHEAD || this == REDIS_FAILOVER_CLOCK_WITHIN_BOUND
                || this == MIXED_EXPIRY_RESTART;
    }

    /**
     * Whether a holder is cut off by this fault (so liveness, the next grant after it, is measured).
     *
     * @return true for faults on the holder itself
     */
    public boolean incapacitatesHolder() {
        return this == KILL_HOLDING || this == KILL_RELEASING || this == STOP_HOLDER || this == FREEZE_CONNECTION;
    }
}
