package dev.locker.mongo;

import dev.locker.api.KeyColumn;
import dev.locker.spi.Deadlines;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Takes back, in the background, claims that an acquire of unknown outcome may still write. A timed-out or cut upsert
 * can sit in a stalled network path and reach the server later. MongoDB keeps no tombstone for it, so one
 * compare-and-delete is not enough: it may run before the late upsert lands. Instead the take-back thread tries again,
 * with back-off, for as long as the claim could be live. That lasts until the server-clock estimate less its
 * uncertainty is past the latest expiry any attempt sent, plus the drift allowance. A request that lands later writes
 * that expiry, which is already past: a dead claim, which any acquire takes over. Each try matches the claim's id
 * only, which nobody uses, so it can remove nothing else. Close stops it.
 */
final class TakeBacks {

    private static final Logger log = LoggerFactory.getLogger(MongoLocker.class);

    /** The compare-and-delete of one claim, by its id; true when it removed the claim. */
    interface Release {
        boolean release(KeyColumn lock, byte[] claim);
    }

    /** A granted claim an attempt of unknown outcome may still write: the latest expiry sent, and the claim's expiry. */
    record Unsettled(long latestExpiryMillis, Duration expiry) {
    }

    private final String rid;
    private final String server;
    private final ServerClock serverClock;
    /** {@code serverClockSkew} in whole milliseconds, rounded up: a member behind by it may judge a claim later. */
    private final long skewMillis;
    private final Release release;
    /** Guards {@link #takeBacks} and {@link #stopped}. */
    private final Object guard = new Object();
    /** The thread that takes back claims of acquires whose outcome is unknown; made when first needed. */
    private ScheduledExecutorService takeBacks;
    private boolean stopped;
    /** The claims being taken back now. */
    private final Set<TakeBack> pending = ConcurrentHashMap.newKeySet();
    /**
     * Claims granted after an attempt whose outcome is unknown, by id: that attempt's request may land after the
     * release and write the claim again, so the release starts a take-back.
     */
    private final Map<ByteBuffer, Unsettled> unsettled = new ConcurrentHashMap<>();
    /** True once the locker began to close: a take-back stops then, before the driver itself is closed. */
    private volatile BooleanSupplier lockerClosed = () -> false;

    TakeBacks(String rid, String server, ServerClock serverClock, long skewMillis, Release release) {
        this.rid = rid;
        this.server = server;
        this.serverClock = serverClock;
        this.skewMillis = skewMillis;
        this.release = release;
    }

    /** Tells how to learn that the locker began to close. */
    void closedWhen(BooleanSupplier closed) {
        this.lockerClosed = closed;
    }

    /**
     * Remembers a granted claim one of whose attempts had an unknown outcome, until its release; forgets those that
     * could no longer be live (a hold lost without a release).
     */
    void settleOnRelease(byte[] claim, long latestExpiryMillis, Duration expiry) {
        long deadBefore = serverClock.read().deadBefore().getTime();
        unsettled.values().removeIf(u -> u.latestExpiryMillis() + mayStillLookLiveMillis(u.expiry()) < deadBefore);
        unsettled.put(ByteBuffer.wrap(claim), new Unsettled(latestExpiryMillis, expiry));
    }

    /** The claim's record of an attempt of unknown outcome, forgotten now; null when it has none. */
    Unsettled released(byte[] claim) {
        return unsettled.isEmpty() ? null : unsettled.remove(ByteBuffer.wrap(claim));
    }

    /** Starts taking back {@code claim} on {@code lock}; see the class comment. */
    void takeBack(KeyColumn lock, byte[] claim, long latestExpiryMillis, Duration expiry) {
        takeBackAfter(lock, claim, latestExpiryMillis, expiry, Long.MIN_VALUE);
    }

    /**
     * Starts taking back {@code claim} on {@code lock} once a claim of ours left until {@code leftUntilMillis} (on the
     * server's clock) could no longer be live; at once when that is {@code Long.MIN_VALUE}.
     */
    void takeBackAfter(KeyColumn lock, byte[] claim, long latestExpiryMillis, Duration expiry, long leftUntilMillis) {
        long firstDelay = leftUntilMillis == Long.MIN_VALUE ? 0 : Math.max(0,
                leftUntilMillis + mayStillLookLiveMillis(expiry) - serverClock.read().deadBefore().getTime());
        long latest = latestExpiryMillis != Long.MIN_VALUE ? latestExpiryMillis
                : serverClock.read().serverDateCeil(expiry).getTime();
        TakeBack t = new TakeBack(lock, claim, latest + mayStillLookLiveMillis(expiry), expiry);
        ScheduledExecutorService ex;
        synchronized (guard) {
            if (stopped) {
                log.info("Not taking back the claim on {} whose acquire's outcome is unknown: the locker is closed; "
                        + "if its request still reaches {}, it holds the lock until {}", lock, server,
                        Instant.ofEpochMilli(latest));
                return;
            }
            if (takeBacks == null) {
                takeBacks = Executors.newSingleThreadScheduledExecutor(r -> {
                    Thread th = new Thread(r, "locker-mongo-takeback-" + rid);
                    th.setDaemon(true);
                    return th;
                });
            }
            ex = takeBacks;
            pending.add(t);
        }
        log.debug("Taking back our claim on {} at {} in the background until it could no longer be live ({} on the "
                + "server's clock)", lock, server, Instant.ofEpochMilli(latest));
        t.schedule(ex, firstDelay);
    }

    /**
     * How long past its expiry on this estimate a claim may still look live: 1 % of the claim's expiry for drift (as
     * in {@link Deadlines#of}), and {@code serverClockSkew} for a member whose clock is behind by the bound.
     */
    private long mayStillLookLiveMillis(Duration expiry) {
        return Math.max(1, Deadlines.saturatedNanos(expiry) / 100 / 1_000_000) + skewMillis;
    }

    /** Claims being taken back now (for tests). */
    int pending() {
        return pending.size();
    }

    /** Stops every take-back: the scheduled tries are dropped, and one in flight ends with its I/O. */
    void close() {
        synchronized (guard) {
            stopped = true;
            if (takeBacks != null) {
                takeBacks.shutdownNow();
            }
        }
        int left = pending.size();
        pending.clear();
        if (left > 0) {
            log.info("Locker {} closed while taking back {} claim(s) of acquires whose outcome was unknown: a request "
                    + "of theirs that still reaches {} holds its lock until the claim's expiry", rid, left, server);
        }
    }

    /**
     * One claim being taken back: tries, then waits 100 ms, doubling up to a twentieth of the expiry (at least 100 ms,
     * at most 5 s), so a request that lands late blocks the lock that long at most, not for its expiry.
     */
    private final class TakeBack implements Runnable {
        private final KeyColumn lock;
        private final byte[] claim;
        private final long untilServerMillis;
        private final long maxDelayMillis;
        private long delayMillis = 100;
        private int tries;

        TakeBack(KeyColumn lock, byte[] claim, long untilServerMillis, Duration expiry) {
            this.lock = lock;
            this.claim = claim;
            this.untilServerMillis = untilServerMillis;
            this.maxDelayMillis = Math.max(100, Math.min(5_000, Deadlines.saturatedNanos(expiry) / 20 / 1_000_000));
        }

        @Override
        public void run() {
            if (serverClock.read().deadBefore().getTime() > untilServerMillis || lockerClosed.getAsBoolean()) {
                pending.remove(this);
                log.debug("Stopped taking back our claim on {} after {} tries: it can no longer be live", lock, tries);
                return;
            }
            tries++;
            try {
                if (release.release(lock, claim)) {
                    log.info("Took back our claim on {} at {} (try {}): an attempt of an acquire whose outcome was "
                            + "unknown had written it, and nobody uses it", lock, server, tries);
                }
            } catch (RuntimeException e) {
                log.debug("Could not take back our claim on {} at {} (try {}), trying again: {}", lock, server, tries,
                        e.toString());
            }
            long delay = delayMillis;
            delayMillis = Math.min(maxDelayMillis, delayMillis * 2);
            ScheduledExecutorService ex;
            synchronized (guard) {
                ex = stopped ? null : takeBacks;
            }
            if (ex != null) {
                schedule(ex, delay);
            } else {
                pending.remove(this);
            }
        }

        void schedule(ScheduledExecutorService ex, long delay) {
            try {
                ex.schedule(this, delay, TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException closing) {
                pending.remove(this); // the locker closed meanwhile
            }
        }
    }
}
