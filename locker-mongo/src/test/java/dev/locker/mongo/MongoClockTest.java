package dev.locker.mongo;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import org.bson.Document;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Clock skew against a real server whose clock is really off: the in-process server's clock runs 10 minutes BEHIND
 * this JVM's, so every locker here has a clock 10 minutes ahead of the server — the direction in which an uncorrected
 * client would declare live claims dead. (Values of offsets are compared with a generous tolerance; nothing is timed.)
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MongoClockTest {

    private static final Duration SERVER_BEHIND = Duration.ofMinutes(10);
    private static final Duration TOLERANCE = Duration.ofSeconds(5);

    private MongoFixture fixture;
    private InProcessMongo mongo;
    private final List<AutoCloseable> toClose = new CopyOnWriteArrayList<>();

    @BeforeAll
    void start() {
        fixture = MongoFixture.scenarios("clock");
        mongo = fixture.server();
        mongo.clock().offset(SERVER_BEHIND.negated());
    }

    @AfterAll
    void stop() {
        fixture.close();
    }

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : toClose) {
            c.close();
        }
        toClose.clear();
    }

    private MongoLocker open(String name, Duration expiry, Duration maxSkew) {
        LockerConfig config = LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8))
                .expiry(expiry).build();
        MongoLocker l = MongoLockerProvider.builder(mongo.uri()).collection("clock").config(config)
                .maxClockSkew(maxSkew).build();
        toClose.add(l);
        return l;
    }

    private static KeyColumn lock(String name) {
        return KeyColumn.of(name + "-" + LockerConfig.randomRid().substring(0, 8), "");
    }

    private static void assertNear(Instant expected, Instant actual, String what) {
        assertTrue(Duration.between(expected, actual).abs().compareTo(TOLERANCE) < 0,
                what + ": expected about " + expected + ", was " + actual);
    }

    @Test
    void theOffsetIsMeasuredFromTheServersReplyAndExpiryIsWrittenOnTheServersClock() {
        MongoLocker a = open("a", Duration.ofSeconds(60), Duration.ofHours(1));
        assertNear(Instant.EPOCH.minus(SERVER_BEHIND), Instant.EPOCH.plus(a.clockOffset()), "measured offset");
        KeyColumn lock = lock("written");
        a.acquire(lock, "on the server's clock").close();
        Document doc = fixture.rawDoc(lock);
        assertNear(Instant.now().minus(SERVER_BEHIND), doc.getDate("expiresAt").toInstant(), "release time");
    }

    @Test
    void aClientAheadOfTheServerDoesNotStealALiveLock() {
        MongoLocker a = open("a", Duration.ofSeconds(60), Duration.ofHours(1));
        MongoLocker b = open("b", Duration.ofSeconds(60), Duration.ofHours(1));
        KeyColumn lock = lock("live");
        try (Lease held = a.acquire(lock, "holding")) {
            // b's own clock is 10 minutes past a's expiry as written on the server; corrected, b sees it live
            TemporaryLockingException e = assertThrows(TemporaryLockingException.class, () -> b.acquire(lock, "steal?"));
            assertEquals(a.rid(), e.holder().rid());
            held.renew();
        }
    }

    @Test
    void beyondMaxClockSkewFreeLocksAreTakenButExpiredHoldersAreNotTakenOver() throws Exception {
        MongoLocker a = open("a", Duration.ofMillis(200), Duration.ofHours(1));
        MongoLocker skewed = open("skewed", Duration.ofSeconds(60), Duration.ofSeconds(10));
        MongoLocker corrected = open("corrected", Duration.ofSeconds(60), Duration.ofHours(1));
        KeyColumn abandoned = lock("abandoned");
        a.writeLock(abandoned, new Object()); // a dies holding it
        Thread.sleep(400);

        try (Lease free = skewed.acquire(lock("free"), "free locks are fine")) {
            free.renew(); // and so are renewals and releases of its own
        }
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                () -> skewed.acquire(abandoned, "take over?"));
        assertTrue(e.getMessage().contains("maxClockSkew"), e.getMessage());
        assertEquals(a.rid(), e.holder().rid());

        try (Lease taken = corrected.acquire(abandoned, "take over")) {
            assertTrue(taken.fencingToken() > 0);
        }
    }
}
