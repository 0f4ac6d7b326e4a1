package dev.locker.mongo;

import com.mongodb.MongoCommandException;
import com.mongodb.client.MongoDatabase;
import dev.locker.api.TimeSource;
import org.bson.Document;

import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.concurrent.TimeUnit;

/**
 * This process's estimate of the MongoDB primary's wall clock, measured from the server's own reply the way MongoDB's
 * legacy distributed lock measured skew, and carried forward on the locker's monotonic clock. Every claim expiry
 * written to and compared in the lock collection is on this estimated server clock, so the lockers of all processes
 * compare expiries on one clock even when their own clocks disagree.
 *
 * <p>Measurement: {@code n0 = nanoTime()}, send {@code hello} (or {@code isMaster} where {@code hello} is unknown, as
 * on MongoDB before 4.4.2 and on mongo-java-server), {@code n1 = nanoTime()}; the reply's {@code localTime} was taken
 * somewhere between, so at the midpoint of the round trip the server's clock read {@code localTime} within
 * {@code ± (rtt / 2 + 1 ms)} (the reply has millisecond resolution). Later estimates add the monotonic time elapsed
 * since that midpoint: a step of the local wall clock (NTP, an operator, a resumed VM) never moves the estimate; it
 * only changes the reported offset, which is what {@code maxClockSkew} judges. The periodic re-measure keeps the
 * earlier sample while it is sharper and agrees: one slow round trip under load must not shorten later leases.
 *
 * <p>Using the estimate safely: a holder is dead only when its expiry is before {@link Reading#deadBefore()} (the
 * estimate minus its uncertainty), so that no error of the estimate within the uncertainty lets this process take
 * over or scrub a claim that its holder, whose own local expiry is shortened by its uncertainty, still believes alive.
 *
 * <p>Aging: a sample carried forward is only as good as the monotonic clock that carries it. Its uncertainty grows
 * with its age at the drift rate two hosts' clocks may have (0.1 %, {@link #DRIFT_DIVISOR}): a locker whose clock
 * drifts and whose re-measurements fail (or are switched off) loses validity and takeovers, never safety. When what
 * aging added exceeds a tenth of the expiry, or the estimate and the local wall clock moved apart by more than it
 * since the sample (a suspended host: the monotonic clock stops, the wall clock does not; or a step of the wall clock),
 * {@link #read()} measures again first (one round trip, rare); should that fail, the estimate counts the whole move as
 * uncertainty.
 *
 * <p>Invariant: {@link #read()} blocks on I/O only to measure a sample that aged or moved as above; {@link #measure()}
 * replaces the sample atomically.
 */
final class ServerClock {

    /**
     * One measurement: the server's clock read {@code serverAt} (within {@code uncertainty}) when the monotonic clock
     * read {@code nanosAt}; {@code offset} is the server's clock minus the local wall clock at that moment.
     */
    record Sample(Instant serverAt, long nanosAt, Duration uncertainty, Duration offset, String command) {
    }

    /**
     * What one operation needs to know about time, read once before it sends its request: {@code nanos} is the
     * monotonic reading the holder's deadline counts from; the rest derives from it and the last sample.
     */
    record Reading(long nanos, Instant local, Instant server, Duration uncertainty, Duration offset,
                   boolean skewTolerable) {

        /** The server-clock time as a BSON date, rounded down. */
        Date serverDateFloor() {
            return floor(server);
        }

        /**
         * A claim whose expiry is before this date is dead on the server's clock, whatever the error of the estimate
         * (the estimate minus its uncertainty, rounded down). Taking over and scrubbing use this, never the estimate.
         */
        Date deadBefore() {
            return floor(server.minus(uncertainty));
        }

        /** {@code server + d} as a BSON date, rounded up (a written expiry is never earlier than meant). */
        Date serverDateCeil(Duration d) {
            Instant t = server.plus(d);
            long millis = t.toEpochMilli();
            return new Date(t.getNano() % 1_000_000 == 0 ? millis : millis + 1);
        }

        /** The server-clock time in microseconds since the epoch. */
        long serverMicros() {
            return Math.addExact(Math.multiplyExact(server.getEpochSecond(), 1_000_000L), server.getNano() / 1_000);
        }

        private static Date floor(Instant t) {
            return new Date(Math.floorDiv(t.getEpochSecond() * 1_000_000_000L + t.getNano(), 1_000_000L));
        }
    }

    private static final Duration RESOLUTION = Duration.ofMillis(1);

    /**
     * The rate at which the monotonic clock that carries a sample and the server's clock may drift apart: 0.1 %
     * (1000 ppm; uncertainty grows by a thousandth of a sample's age). Crystals keep within 100 ppm, NTP slews a clock
     * by at most 500 ppm: two hosts stay within it. (A claim's own life keeps a wider 1 % margin, in deadline().)
     */
    private static final long DRIFT_DIVISOR = 1000;

    private final TimeSource time;
    private final MongoDatabase admin;
    private final Duration maxSkew;
    /** When aging added more than this to a sample's uncertainty, it is measured again before use (a tenth of the expiry). */
    private final long refreshAboveNanos;
    private volatile Sample sample;
    private volatile boolean helloUnknown;

    ServerClock(TimeSource time, MongoDatabase admin, Duration maxSkew, Duration expiry) {
        this.time = time;
        this.admin = admin;
        this.maxSkew = maxSkew;
        long e;
        try {
            e = expiry.toNanos();
        } catch (ArithmeticException tooLong) {
            e = Long.MAX_VALUE;
        }
        this.refreshAboveNanos = Math.max(TimeUnit.MILLISECONDS.toNanos(10), e / 10);
    }

    /**
     * Measures the offset now and keeps whichever sample is less uncertain: a slow round trip under load must not
     * replace a sharper earlier sample. The earlier one stays only while the new one agrees with it.
     *
     * @return the sample kept
     */
    Sample measureKeepingTheBetter() {
        Sample old = sample;
        Sample fresh = take();
        if (old != null) {
            Reading then = estimateAt(old, fresh.nanosAt(), null);
            Duration gap = Duration.between(then.server(), fresh.serverAt()).abs();
            boolean agrees = gap.compareTo(then.uncertainty().plus(fresh.uncertainty())) <= 0;
            if (agrees && then.uncertainty().compareTo(fresh.uncertainty()) < 0) {
                return old;
            }
        }
        sample = fresh;
        return fresh;
    }

    /** Measures the offset now (one round trip) and keeps the result; throws the driver's exception on failure. */
    Sample measure() {
        Sample s = take();
        sample = s;
        return s;
    }

    /** One measurement, not kept: see the class comment. */
    private Sample take() {
        long n0 = time.nanoTime();
        Instant t0 = time.now();
        Document reply = ask();
        long n1 = time.nanoTime();
        Object localTime = reply.get("localTime");
        if (!(localTime instanceof Date)) {
            throw new IllegalStateException("the server's " + (helloUnknown ? "isMaster" : "hello")
                    + " reply has no localTime date: cannot measure the clock offset; reply keys " + reply.keySet());
        }
        Duration halfRtt = Duration.ofNanos(Math.max(0, n1 - n0)).dividedBy(2);
        Instant serverAt = ((Date) localTime).toInstant();
        Sample s = new Sample(serverAt, n0 + halfRtt.toNanos(), halfRtt.plus(RESOLUTION),
                Duration.between(t0.plus(halfRtt), serverAt), helloUnknown ? "isMaster" : "hello");
        return s;
    }

    private Document ask() {
        if (!helloUnknown) {
            try {
                return admin.runCommand(new Document("hello", 1));
            } catch (MongoCommandException e) {
                if (e.getErrorCode() != 59) { // CommandNotFound: a server older than 4.4.2, or mongo-java-server
                    throw e;
                }
                helloUnknown = true;
            }
        }
        return admin.runCommand(new Document("isMaster", 1));
    }

    /** The current estimate; requires one successful {@link #measure()} before. */
    Reading read() {
        Sample s = sample;
        Reading r = estimate(s);
        long moved = Math.abs(r.offset().minus(s.offset()).toNanos());
        long uncertainty = r.uncertainty().toNanos();
        if (uncertainty - s.uncertainty().toNanos() > refreshAboveNanos || moved > uncertainty) {
            try {
                return estimate(measure());
            } catch (RuntimeException e) {
                // unmeasured: the estimate may be off by the whole move (a suspend), and it says so
                return new Reading(r.nanos(), r.local(), r.server(), r.uncertainty().plusNanos(moved), r.offset(),
                        false);
            }
        }
        return r;
    }

    /** The estimate from sample {@code s}, its uncertainty grown with the sample's age (see the class comment). */
    private Reading estimate(Sample s) {
        return estimateAt(s, time.nanoTime(), time.now());
    }

    /** The estimate from sample {@code s} at monotonic reading {@code nanos}; {@code local} is the wall clock then. */
    private Reading estimateAt(Sample s, long nanos, Instant local) {
        long age = Math.max(0, nanos - s.nanosAt());
        Instant server = s.serverAt().plusNanos(nanos - s.nanosAt());
        Duration uncertainty = s.uncertainty().plusNanos(age / DRIFT_DIVISOR);
        if (local == null) {
            return new Reading(nanos, null, server, uncertainty, null, false);
        }
        Duration offset = Duration.between(local, server);
        return new Reading(nanos, local, server, uncertainty, offset, offset.abs().compareTo(maxSkew) <= 0);
    }

    Sample sample() {
        return sample;
    }

    Duration maxSkew() {
        return maxSkew;
    }
}
