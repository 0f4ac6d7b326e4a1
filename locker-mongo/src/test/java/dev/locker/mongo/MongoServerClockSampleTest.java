package dev.locker.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.event.CommandListener;
import com.mongodb.event.CommandStartedEvent;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.TimeSource;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The periodic re-measure keeps the sharper of two agreeing samples, and takes a new one that disagrees; a locker
 * opens with a sample taken on a warm connection.
 */
class MongoServerClockSampleTest extends MongoScenarios {

    private static final Duration SLOW = Duration.ofMillis(800);

    /** Runs {@code test} with a ServerClock on {@code clock} whose measuring round trip lasts what {@code rtt} says. */
    private void withClock(VirtualClock clock, AtomicReference<Duration> rtt, Consumer<ServerClock> test) {
        mongo.clock().follow(clock);
        CommandListener slow = new CommandListener() {
            @Override
            public void commandStarted(CommandStartedEvent e) {
                if (e.getCommandName().equalsIgnoreCase("isMaster") || e.getCommandName().equals("hello")) {
                    clock.advance(rtt.get()); // the round trip's time, all before the server reads its clock
                }
            }
        };
        try (MongoClient client = MongoClients.create(MongoClientSettings.builder()
                .applyConnectionString(new ConnectionString(mongo.uri())).addCommandListener(slow).build())) {
            test.accept(new ServerClock(clock, client.getDatabase("admin"), Duration.ofSeconds(5),
                    Duration.ofSeconds(30)));
        }
    }

    @Test
    void aSlowReMeasureKeepsTheSharperSampleAndAFastOneReplacesASlowOne() {
        VirtualClock clock = new VirtualClock();
        AtomicReference<Duration> rtt = new AtomicReference<>(Duration.ZERO);
        withClock(clock, rtt, sc -> {
            ServerClock.Sample sharp = sc.measure();
            clock.advance(Duration.ofSeconds(60));
            rtt.set(SLOW);
            assertSame(sharp, sc.measureKeepingTheBetter(), "a slow round trip keeps the sharper sample");
            assertSame(sharp, sc.sample());

            ServerClock.Sample blurred = sc.measure(); // as read() does after aging: the slow sample replaces it
            assertEquals(SLOW.dividedBy(2).plusMillis(1), blurred.uncertainty());
            clock.advance(Duration.ofSeconds(60));
            rtt.set(Duration.ZERO);
            ServerClock.Sample kept = sc.measureKeepingTheBetter();
            assertEquals(Duration.ofMillis(1), kept.uncertainty(), "a fast round trip replaces the blurred sample");
            assertSame(kept, sc.sample());
        });
    }

    /**
     * A locker's first round trip opens its connection (TCP, TLS, authentication): the sample it keeps is one taken on
     * the warm connection after it, so its leases are not cut short by the handshake's time for the next minute.
     */
    @Test
    void aLockerWhoseFirstRoundTripOpenedItsConnectionCountsOnASharperSample() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        AtomicInteger hellos = new AtomicInteger();
        CommandListener firstIsSlow = new CommandListener() {
            @Override
            public void commandStarted(CommandStartedEvent e) {
                if ((e.getCommandName().equalsIgnoreCase("isMaster") || e.getCommandName().equals("hello"))
                        && hellos.getAndIncrement() == 0) {
                    clock.advance(SLOW);
                }
            }
        };
        MongoClient client = fixture.closeLast(MongoClients.create(MongoClientSettings.builder()
                .applyConnectionString(new ConnectionString(mongo.uri())).addCommandListener(firstIsSlow).build()));
        Duration expiry = Duration.ofSeconds(30);
        MongoLocker locker = fixture.closeFirst(MongoLocker.builder().client(client).database("locker")
                .collection(fixture.collection()).clockCheckInterval(Duration.ZERO)
                .config(config("sharp", expiry, clock).build()).build());
        Lease lease = locker.acquire(KeyColumn.named("sharp"), "after a slow first round trip").keepAlive(false);
        assertTrue(hellos.get() >= 2, "measured again on the warm connection: " + hellos.get());
        MongoLocker fast = open(config("fast", expiry, clock).build(), Duration.ZERO);
        Lease control = fast.acquire(KeyColumn.named("fast"), "after a fast first round trip").keepAlive(false);
        assertEquals(control.remaining(), lease.remaining(), "the lease is cut by as much as one of a locker whose "
                + "first round trip was fast, not by half the slow one (" + SLOW.dividedBy(2) + ")");
    }

    @Test
    void aSharperSampleThatDisagreesWithTheNewOneIsReplaced() {
        VirtualClock clock = new VirtualClock();
        AtomicReference<Duration> rtt = new AtomicReference<>(Duration.ZERO);
        withClock(clock, rtt, sc -> {
            ServerClock.Sample sharp = sc.measure();
            clock.advance(Duration.ofSeconds(60));
            clock.stepWallClock(Duration.ofMinutes(10)); // a suspend: the server's clock went on, ours did not see it
            rtt.set(SLOW);
            ServerClock.Sample kept = sc.measureKeepingTheBetter();
            assertEquals(SLOW.dividedBy(2).plusMillis(1), kept.uncertainty(), "the disagreeing new sample is taken");
            assertSame(kept, sc.sample());
            assertNotSame(sharp, kept);
        });
    }

    /**
     * The second measurement only sharpens a sample the locker already has: when the server goes away between the
     * TTL index and that measurement, the locker opens on its first sample (as a failed periodic re-measure keeps the
     * sample it has), and its first acquire after the server came back succeeds.
     */
    @Test
    void aLockerOpensOnItsFirstSampleWhenOnlyTheSecondMeasurementFails() {
        AtomicBoolean indexed = new AtomicBoolean();
        AtomicBoolean stopped = new AtomicBoolean();
        CommandListener goneAfterTheIndex = new CommandListener() {
            @Override
            public void commandStarted(CommandStartedEvent e) {
                String name = e.getCommandName();
                if (name.equals("createIndexes")) {
                    indexed.set(true);
                } else if ((name.equalsIgnoreCase("isMaster") || name.equals("hello")) && indexed.get()
                        && stopped.compareAndSet(false, true)) {
                    mongo.stop(); // a failover, a restart: the second measurement's round trip fails
                }
            }
        };
        MongoClient client = fixture.closeLast(MongoClients.create(MongoClientSettings.builder()
                .applyConnectionString(new ConnectionString(mongo.uri())).addCommandListener(goneAfterTheIndex)
                .build()));
        MongoLocker locker;
        try {
            locker = fixture.closeFirst(MongoLocker.builder().client(client).database("locker")
                    .collection(fixture.collection()).clockCheckInterval(Duration.ZERO)
                    .config(config("second", Duration.ofSeconds(30), TimeSource.system()).build()).build());
        } finally {
            mongo.restart();
        }
        assertTrue(stopped.get(), "the server went away just before the second measurement");
        locker.acquire(KeyColumn.named("second"), "after the server came back").close();
    }
}
