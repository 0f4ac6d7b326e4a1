package dev.locker.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.event.CommandListener;
import com.mongodb.event.CommandStartedEvent;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

/** The periodic re-measure keeps the sharper of two agreeing samples, and takes a new one that disagrees. */
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
}
