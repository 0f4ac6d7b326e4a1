package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.args.Rawable;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The restart guard as one locker keeps it: its own guard, the longest recorded guard it was refused for, the keys
 * the acquire script keeps on a single server (admission marker, guard record, lineage record), and the refusals'
 * messages. The scripts decide (see {@code admit} in {@code common.lua}); this class remembers what only the process
 * can: a longer guard survives here after a restart that lost its record.
 */
final class RedisRestartGuard {

    private static final Logger log = LoggerFactory.getLogger(RedisRestartGuard.class);

    private final Duration restartGuard;
    private final RedisKeys keys;
    private final String server;
    private final UnifiedJedis client;
    private final RedisCalls calls;
    /**
     * A single server (one admission marker and guard record for all locks) rather than a Cluster; null until the
     * server behind a caller's own client has said which it runs (see {@link #standalone()}).
     */
    private volatile Boolean standalone;
    /** Our own restart guard, as the acquire script gets it until a longer recorded one refuses us. */
    private final long ownGuardMs;
    /** How long a renewal keeps the guard record alive: as admit does, the longer of the guard and 1 s, plus 1 s. */
    private final Rawable recordLifeArg;
    /**
     * The acquire script's guard argument: ours, or ours and the longest guard recorded for our prefix that refused
     * us. Only this process remembers that guard after a restart that loses the record.
     */
    private volatile Rawable guardArg;
    /** The longest restart guard (ms) this locker waits out after a restart: its own, or a longer one it met. */
    private volatile long waitedGuardMs;
    /** Held while {@link #waitedGuardMs} and {@link #guardArg} change, so that they always name the same guard. */
    private final Object guardChange = new Object();
    private final Rawable recordArg;
    /**
     * The acquire script's keys after the lock's on a single server: marker (of {@link #guardArg}), guard record,
     * lineage record. Made anew, never changed, whenever the guard argument changes.
     */
    private volatile Rawable[] standaloneKeys;
    private static final Rawable[] NO_KEYS = {};

    /**
     * @param standalone true or false when the client's topology is known (the locker made it), null to ask the
     *                   server at the first acquire or renewal
     */
    RedisRestartGuard(Duration restartGuard, RedisKeys keys, String server, UnifiedJedis client, RedisCalls calls,
                      Boolean standalone) {
        this.restartGuard = restartGuard;
        this.keys = keys;
        this.server = server;
        this.client = client;
        this.calls = calls;
        this.standalone = standalone;
        this.ownGuardMs = guardMillis(restartGuard);
        this.guardArg = RedisScript.arg(ScriptArgs.millis(restartGuard));
        this.waitedGuardMs = ownGuardMs;
        this.recordLifeArg = RedisScript.arg(Long.toString(Math.max(ownGuardMs, 1_000) + 1_000)
                .getBytes(StandardCharsets.US_ASCII));
        this.recordArg = RedisScript.arg(keys.guardRecordKey());
        this.standaloneKeys = standaloneKeys(guardArg);
    }

    /** The acquire script's keys after the lock's for the guard argument {@code guard}. */
    private Rawable[] standaloneKeys(Rawable guard) {
        return new Rawable[]{RedisScript.arg(keys.markerKey(guard.getRaw())), recordArg,
                RedisScript.arg(keys.lineageKey())};
    }

    /** The guard this locker was built with. */
    Duration restartGuard() {
        return restartGuard;
    }

    /**
     * The acquire script's keys after the lock's: marker, guard record and lineage record on a single server, none
     * in a Cluster (a second key would make the script fail with TRYAGAIN while the lock's slot migrates).
     */
    Rawable[] acquireKeys() {
        return standalone() ? standaloneKeys : NO_KEYS; // never changed by the caller: copied into its call
    }

    /** The acquire script's guard argument (ARGV 5): ours, or {@code "<ours>:<longer>"} once a longer one refused us. */
    Rawable acquireArg() {
        return guardArg;
    }

    /** True when renewals keep the guard record alive: a single server, and a guard above 0 (see renew.lua). */
    boolean renewalsKeepTheRecord() {
        return !restartGuard.isZero() && standalone();
    }

    /** The renew script's guard record key. */
    Rawable recordArg() {
        return recordArg;
    }

    /** How long a renewal keeps the guard record alive, as the renew script gets it. */
    Rawable recordLifeArg() {
        return recordLifeArg;
    }

    /** The acquire script's {@code {-2, ms left}}: the server's data is younger than the guard this locker waits out. */
    TemporaryLockingException tooYoung(KeyColumn lock, long leftMs) {
        long waitedMs = waitedGuardMs;
        String since = waitedMs == ownGuardMs ? "restartGuard=" + restartGuard + " ago"
                : Duration.ofMillis(waitedMs) + " ago (the restartGuard recorded for prefix " + keys.prefix()
                + " when it refused this locker's restartGuard=" + restartGuard + ")";
        log.info("Refusing a grant on {}: {} started, or took its data over, less than {}: it may have lost "
                + "claims; {} ms left", lock, server, since, leftMs);
        return new TemporaryLockingException(server + " started, or took its data over from another server, less "
                + "than " + since + ": it may have lost claims in a restart, so no claim is granted for another "
                + leftMs + " ms (set restartGuard=0 for a server whose data survives restarts)", lock);
    }

    /**
     * The acquire script's {@code {-6, recorded ms}}: the prefix's lockers record another guard. A longer one is
     * remembered, to be waited out after every later restart of the server.
     */
    PermanentLockingException otherGuard(KeyColumn lock, byte[] recordedMs) {
        Duration recorded = Duration.ofMillis(Long.parseLong(new String(recordedMs, StandardCharsets.US_ASCII)));
        waitOutAfterARestart(recorded);
        return new PermanentLockingException("restartGuard=" + restartGuard + " differs from restartGuard="
                + recorded + ", which the other lockers of prefix " + keys.prefix() + " use on " + server
                + ": after a restart without data the shorter guard would grant locks whose holders still work. "
                + "Give every locker sharing the server one restartGuard (the record lapses "
                + (recorded.compareTo(Duration.ofSeconds(1)) > 0 ? recorded : Duration.ofSeconds(1)).plusSeconds(1)
                + " after their last grant or renewal)", lock);
    }

    /** A claim that outlives the restart guard outlives a restart that lost it: such an expiry is refused. */
    void checkExpiry(Duration expiry) {
        if (!restartGuard.isZero() && expiry.compareTo(restartGuard) > 0) {
            throw new IllegalArgumentException("expiry " + expiry + " is longer than restartGuard " + restartGuard
                    + ": after a restart without data the lock could be granted again while its holder still works");
        }
    }

    /**
     * Remembers a longer guard recorded for our prefix, to wait out after every later restart of the server. The
     * restart loses the record with the claims granted under it, so this locker's memory is what covers them.
     */
    private void waitOutAfterARestart(Duration recorded) {
        long ms = recorded.toMillis();
        boolean longer;
        synchronized (guardChange) {
            longer = ms > waitedGuardMs;
            if (longer) {
                waitedGuardMs = ms;
                guardArg = RedisScript.arg((ownGuardMs + ":" + ms).getBytes(StandardCharsets.US_ASCII));
                standaloneKeys = standaloneKeys(guardArg);
            }
        }
        if (longer) {
            log.info("restartGuard={} of this locker differs from restartGuard={} recorded for prefix {} on {}: after "
                    + "a restart of the server it waits out {}", restartGuard, recorded, keys.prefix(), server,
                    recorded);
        }
    }

    /**
     * True for a single server, false for a Cluster. A client of the caller's own is asked once, at its first
     * acquire or renewal: its class cannot tell a single server from a Cluster.
     */
    private boolean standalone() {
        Boolean known = standalone;
        if (known == null) {
            known = !calls.withRetries(() -> RedisConnections.askClusterMode(client, keys.guardKey()));
            standalone = known;
        }
        return known;
    }

    /** A guard in whole ms, as the scripts get it ({@link ScriptArgs#millis}). */
    private static long guardMillis(Duration guard) {
        return Long.parseLong(new String(ScriptArgs.millis(guard), StandardCharsets.US_ASCII));
    }
}
