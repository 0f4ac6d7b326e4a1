package dev.locker.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.model.Filters;
import com.mongodb.event.CommandListener;
import com.mongodb.event.CommandStartedEvent;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.testkit.OffsetClock;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What an imperfect estimate of the server's clock must not do: let one process declare dead a claim that its holder
 * still believes alive. The in-process server's clock is a virtual clock (the "true" time); the lockers' clocks are
 * that virtual clock, possibly with a wall clock that steps, and the offset measurement can be made asymmetric (the
 * request slow, the reply fast) so that the measured offset is wrong by up to its own uncertainty. Nothing is timed:
 * time moves only when the test moves it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MongoClockErrorTest {

    private final VirtualClock clock = new VirtualClock(Instant.parse("2026-03-01T00:00:00Z"));
    private MongoFixture fixture;
    private InProcessMongo mongo;

    @BeforeEach
    void start() {
        fixture = MongoFixture.scenarios("clock_errors");
        mongo = fixture.server();
        mongo.clock().follow(clock);
    }

    @AfterEach
    void stop() throws Exception {
        fixture.closeOpened();
        fixture.close();
    }

    private MongoLocker open(String name, TimeSource time, Duration expiry, CommandListener listener) {
        MongoClientSettings.Builder settings = MongoClientSettings.builder()
                .applyConnectionString(new ConnectionString(mongo.uri()));
        if (listener != null) {
            settings.addCommandListener(listener);
        }
        MongoClient client = fixture.closeLast(MongoClients.create(settings.build()));
        LockerConfig config = LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8))
                .expiry(expiry).timeSource(time).build();
        MongoLocker l = MongoLocker.builder().client(client).collection("clock_errors").config(config)
                .maxClockSkew(Duration.ofHours(1)).clockCheckInterval(Duration.ZERO).build();
        return fixture.closeFirst(l);
    }

    private static KeyColumn lock(String name) {
        return KeyColumn.of(name + "-" + LockerConfig.randomRid().substring(0, 8), "");
    }

    /**
     * B measured the offset through slow requests and fast replies: it believes the server 1 s ahead of where it
     * is, and says so (uncertainty about 1 s). One second before A's claim expires on the server, B must still see A
     * as the holder: neither take the lock over nor scrub A's claim, which A rightly believes alive.
     */
    @Test
    void anOffsetWrongByItsUncertaintyNeverDeclaresALiveClaimDead() {
        MongoLocker a = open("a", clock, Duration.ofSeconds(10), null);
        AtomicBoolean slowRequest = new AtomicBoolean(true);
        CommandListener slow = new CommandListener() {
            @Override
            public void commandStarted(CommandStartedEvent event) {
                String name = event.getCommandName();
                if (("hello".equalsIgnoreCase(name) || "isMaster".equalsIgnoreCase(name))
                        && slowRequest.get()) {
                    clock.advance(Duration.ofSeconds(2)); // the request travels 2 s, the reply 0 s
                }
            }
        };
        MongoLocker b = open("b", clock, Duration.ofSeconds(10), slow); // every measurement of its opening
        slowRequest.set(false);
        assertTrue(b.clockOffset().compareTo(Duration.ofMillis(900)) > 0, "B's estimate is off: " + b.clockOffset());

        KeyColumn lock = lock("uncertain");
        try (Lease held = a.acquire(lock, "holding")) {
            clock.advance(Duration.ofMillis(9_500));
            held.check(); // A: still ours, by its conservative local expiry

            assertEquals(a.rid(), b.holder(lock).orElseThrow(() -> new AssertionError(
                    "B declared A's claim dead while A believes it holds")).rid());
            TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                    () -> b.acquire(lock, "take over?"), "B took over a claim A believes alive");
            assertEquals(a.rid(), e.holder().rid());
            held.renew(); // A's claim was not scrubbed either
        }
    }

    /**
     * B's wall clock steps one minute forward after it measured the offset (its monotonic clock does not step).
     * Its estimate of the server's clock must not jump with it: A's live claim stays A's, and a token B hands out
     * stays below the tokens handed out after it.
     */
    @Test
    void aWallClockStepAfterTheMeasurementDoesNotMoveTheServerEstimate() {
        MongoLocker a = open("a", clock, Duration.ofSeconds(30), null);
        OffsetClock bTime = new OffsetClock(clock, Duration.ZERO);
        MongoLocker b = open("b", bTime, Duration.ofSeconds(30), null);
        bTime.step(Duration.ofMinutes(1));

        KeyColumn lock = lock("stepped");
        try (Lease held = a.acquire(lock, "holding")) {
            clock.advance(Duration.ofSeconds(1));
            TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                    () -> b.acquire(lock, "take over?"), "B took over A's live claim after its wall clock stepped");
            assertEquals(a.rid(), e.holder().rid());
            held.check();
        }

        // tokens across the deletion of the document (TTL safety net, operator): B creates it, A after B
        KeyColumn fenced = lock("fenced");
        long tokenB;
        try (Lease lb = b.acquire(fenced, "first")) {
            tokenB = lb.fencingToken();
        }
        try (MongoClient raw = MongoClients.create(mongo.uri())) {
            raw.getDatabase("locker").getCollection("clock_errors")
                    .deleteOne(Filters.eq("_id", fenced.legible()));
        }
        clock.advance(Duration.ofMillis(10));
        try (Lease la = a.acquire(fenced, "after B, after the deletion")) {
            assertTrue(la.fencingToken() > tokenB, "token " + la.fencingToken() + " issued after " + tokenB);
        }
    }
}
