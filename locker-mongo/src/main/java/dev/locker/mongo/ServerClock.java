package dev.locker.mongo;

import com.mongodb.MongoCommandException;
import com.mongodb.client.MongoDatabase;
import dev.locker.api.TimeSource;
import org.bson.Document;

import java.time.Duration;
import java.time.Instant;
import java.util.Date;

/**
 * This process's estimate of the MongoDB primary's wall clock: the locker's {@link TimeSource} plus an offset measured
 * from the server's own reply, the way MongoDB's legacy distributed lock measured skew. Every claim expiry written to
 * and compared in the lock collection is on this estimated server clock, so the lockers of all processes compare
 * expiries on one clock even when their own clocks disagree.
 *
 * <p>Measurement: {@code t0 = now()}, send {@code hello} (or {@code isMaster} where {@code hello} is unknown, as on
 * MongoDB before 4.4.2 and on mongo-java-server), {@code t1 = now()}; the reply's {@code localTime} was taken somewhere
 * between, so {@code offset = localTime - (t0 + t1) / 2} within {@code ± (rtt / 2 + 1 ms)} (the reply has millisecond
 * resolution). The round trip is measured on the monotonic clock.
 *
 * <p>Invariant: {@link #read()} never blocks on I/O; {@link #measure()} replaces the sample atomically.
 */
final class ServerClock {

    /** One measurement. */
    record Sample(Duration offset, Duration uncertainty, String command) {
    }

    /** What one operation needs to know about time, read once before it sends its request. */
    record Reading(Instant local, Instant server, Duration uncertainty, Duration offset, boolean skewTolerable) {

        /** The server-clock time as a BSON date, rounded down (a dead-claim test never runs ahead of the server). */
        Date serverDateFloor() {
            return new Date(Math.floorDiv(server.getEpochSecond() * 1_000_000_000L + server.getNano(), 1_000_000L));
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
    }

    private static final Duration RESOLUTION = Duration.ofMillis(1);

    private final TimeSource time;
    private final MongoDatabase admin;
    private final Duration maxSkew;
    private volatile Sample sample;
    private volatile boolean helloUnknown;

    ServerClock(TimeSource time, MongoDatabase admin, Duration maxSkew) {
        this.time = time;
        this.admin = admin;
        this.maxSkew = maxSkew;
    }

    /** Measures the offset now (one round trip) and keeps the result; throws the driver's exception on failure. */
    Sample measure() {
        long n0 = time.nanoTime();
        Instant t0 = time.now();
        Document reply = ask();
        long n1 = time.nanoTime();
        Object localTime = reply.get("localTime");
        if (!(localTime instanceof Date)) {
            throw new IllegalStateException("the server's " + (helloUnknown ? "isMaster" : "hello")
                    + " reply has no localTime date: cannot measure the clock offset; reply keys " + reply.keySet());
        }
        Duration rtt = Duration.ofNanos(Math.max(0, n1 - n0));
        Instant middle = t0.plus(rtt.dividedBy(2));
        Duration offset = Duration.between(middle, ((Date) localTime).toInstant());
        Sample s = new Sample(offset, rtt.dividedBy(2).plus(RESOLUTION), helloUnknown ? "isMaster" : "hello");
        sample = s;
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
        Instant local = time.now();
        boolean tolerable = s.offset().abs().compareTo(maxSkew) <= 0;
        return new Reading(local, local.plus(s.offset()), s.uncertainty(), s.offset(), tolerable);
    }

    Sample sample() {
        return sample;
    }

    Duration maxSkew() {
        return maxSkew;
    }
}
