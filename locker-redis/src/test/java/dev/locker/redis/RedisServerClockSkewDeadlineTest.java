package dev.locker.redis;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.RedisServer;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Renewals and leases count on the expiry less {@code serverClockSkew}, like a first grant. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisServerClockSkewDeadlineTest {

    private static final Duration EXPIRY = Duration.ofSeconds(10);
    private static final Duration SKEW = Duration.ofSeconds(2);

    private final List<Locker> opened = new ArrayList<>();

    @BeforeEach
    void needsOwnServers() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "starts its own server");
    }

    @AfterEach
    void closeLockers() {
        opened.forEach(Locker::close);
        opened.clear();
    }

    private RedisLocker open(RedisServer server, VirtualClock clock) {
        RedisLocker l = RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix("skewdl:")
                .config(LockerConfig.builder().expiry(EXPIRY).timeSource(clock).build())
                .restartGuard(Duration.ZERO).serverClockSkew(SKEW).build();
        opened.add(l);
        return l;
    }

    /** A renewal's deadline is the expiry less the skew after it, never the whole expiry. */
    @Test
    void aRenewedClaimIsValidForTheExpiryLessTheSkew() {
        try (RedisServer server = RedisServer.start()) {
            VirtualClock clock = new VirtualClock(Instant.now());
            RedisLocker a = open(server, clock);
            LockTransaction tx = new LockTransaction("holder");
            a.writeLock(KeyColumn.named("renewed"), tx);
            a.checkLocks(tx);
            clock.advance(Duration.ofSeconds(5));
            a.renewLocks(tx);
            clock.advance(EXPIRY.minus(SKEW).plusMillis(1));
            assertThrows(ExpiredLockException.class, () -> a.checkLocks(tx), "valid past the renewal's expiry less "
                    + "the skew");
        }
    }

    /** A renewed lease counts on the expiry less the skew from the renewal on. */
    @Test
    void aRenewedLeaseEndsAtTheExpiryLessTheSkew() {
        try (RedisServer server = RedisServer.start()) {
            VirtualClock clock = new VirtualClock(Instant.now());
            RedisLocker a = open(server, clock);
            Lease lease = a.acquire(KeyColumn.named("renewed-lease"), "skew").keepAlive(false);
            clock.advance(Duration.ofSeconds(5));
            lease.renew();
            assertTrue(lease.remaining().compareTo(EXPIRY.minus(SKEW)) <= 0, "a renewed lease counts on "
                    + lease.remaining() + ", more than the expiry less the skew");
            assertTrue(lease.isValid(), "a lease renewed in time is valid");
            clock.advance(EXPIRY.minus(SKEW).plusMillis(1));
            assertFalse(lease.isValid(), "a renewed lease is valid past the expiry less the skew");
        }
    }

    /** A lease counts on the expiry less the skew: past it, it is no longer valid, renewed or not. */
    @Test
    void aLeaseEndsAtTheExpiryLessTheSkew() {
        try (RedisServer server = RedisServer.start()) {
            VirtualClock clock = new VirtualClock(Instant.now());
            RedisLocker a = open(server, clock);
            Lease lease = a.acquire(KeyColumn.named("leased"), "skew").keepAlive(false);
            assertTrue(lease.remaining().compareTo(EXPIRY.minus(SKEW)) <= 0, "a lease counts on " + lease.remaining()
                    + ", more than the expiry less the skew");
            clock.advance(EXPIRY.minus(SKEW).plusMillis(1));
            assertFalse(lease.isValid(), "a lease is valid past the expiry less the skew");
        }
    }
}
