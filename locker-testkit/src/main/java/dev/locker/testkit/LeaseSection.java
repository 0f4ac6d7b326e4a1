package dev.locker.testkit;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.locker.testkit.Scenarios.assertContended;
import static dev.locker.testkit.Scenarios.awaitSize;
import static dev.locker.testkit.Scenarios.take;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Leases for applications: release on close, keep-alive, and the lost signal before the validity ends. */
public interface LeaseSection extends ConformanceScenario {

    @Test
    default void leaseReleasesOnClose() {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        Lease lease;
        try (Lease l = a.acquire(lock, "run migration 7")) {
            lease = l;
            assertTrue(l.fencingToken() > 0);
            assertEquals("run migration 7", b.holder(lock).orElseThrow().why());
            assertThrows(TemporaryLockingException.class, () -> b.acquire(lock, "me too"));
        }
        assertTrue(lease.isClosed());
        lease.close(); // twice is harmless
        try (Lease l = b.acquire(lock, "me now")) {
            assertEquals(b.rid(), a.holder(lock).orElseThrow().rid());
        }
    }

    @Test
    default void leaseRenewalKeepsTheLock() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        KeyColumn lock = lock("x");
        try (Lease lease = a.acquire(lock, "refresh cache")) {
            long token = lease.fencingToken();
            for (int i = 0; i < 3; i++) {
                pass(expiry().dividedBy(2));
                lease.renew();
            }
            assertContended(b, lock, new Object());
            assertEquals(token, lease.fencingToken());
        }
        take(b, lock, new Object());
    }

    @Test
    default void aKeptAliveLeaseOutlivesManyExpiriesWithItsToken() throws Exception {
        Locker a = realTimeProcess("a");
        Locker b = realTimeProcess("b");
        KeyColumn lock = lock("x");
        try (Lease lease = a.acquire(lock, "long job")) {
            long token = lease.fencingToken();
            for (int i = 0; i < 4; i++) {
                Thread.sleep(LEASE_EXPIRY.toMillis());
                assertTrue(lease.isValid(), "still valid after " + (i + 1) + " expiries");
                assertContended(b, lock, new Object());
            }
            lease.check();
            assertEquals(token, lease.fencingToken(), "renewed in place: same token");
        }
        take(b, lock, new Object()); // closing stopped the keep-alive and released at once
    }

    @Test
    default void aLeaseWithoutKeepAliveExpiresAndSaysSo() throws Exception {
        Locker a = realTimeProcess("a");
        KeyColumn lock = lock("x");
        Lease lease = a.acquire(lock, "short job").keepAlive(false);
        assertTrue(lease.isValid());
        assertTrue(lease.remaining().compareTo(LEASE_EXPIRY) <= 0);
        Thread.sleep(LEASE_EXPIRY.toMillis() + 100);
        assertFalse(lease.isValid());
        assertEquals(Duration.ZERO, lease.remaining());
        assertThrows(ExpiredLockException.class, lease::fencingToken);
        lease.close();
    }

    /**
     * A lease from {@code acquireAll} that lost one lock is invalid for good. Its keep-alive then stops renewing its
     * other claims, so a lease not closed yet does not keep those locks from other processes past one expiry.
     */
    @Test
    default void theOtherLocksOfALostMultiLockLeaseBecomeFreeForOthers() throws Exception {
        Locker a = realTimeProcess("a");
        Locker operator = realTimeProcess("operator");
        KeyColumn x = lock("x");
        KeyColumn y = lock("y");
        Lease lease = a.acquireAll(List.of(x, y), "both"); // kept alive
        List<LockLost> told = new CopyOnWriteArrayList<>();
        lease.onLost(told::add);

        assertTrue(operator.forceRelease(x, "operator"));
        assertTrue(awaitSize(told, 1), "the lease learned that x was lost");
        assertFalse(lease.isValid(), "the lease is no longer valid");
        // bounded by three expiries: a keep-alive that goes on renewing y keeps it held for all of them
        long bound = LEASE_EXPIRY.multipliedBy(3).toMillis() / 10;
        for (int i = 0; i < bound && operator.holding(y).isPresent(); i++) {
            Thread.sleep(10);
        }
        assertTrue(operator.holding(y).isEmpty(), "after the lease lost x (and was told), its keep-alive went on "
                + "renewing y: " + operator.holding(y));
        try (Lease next = operator.acquire(y, "y is free again")) {
            assertTrue(next.isValid());
        }
        lease.close();
    }

    /**
     * Renewals that keep failing (backend unreachable): the lease is declared lost before its validity ends. Each
     * of these "told before" cases runs again, stretched, when a signal came late only as far as this JVM's stalls
     * explain (a loaded machine).
     */
    @Test
    default void aLeaseWhoseRenewalsFailIsDeclaredLostBeforeItsValidityEnds() throws Exception {
        Assumptions.assumeTrue(fixture().canBreakBackend(), "backend cannot be broken");
        Punctuality.rerunWhileStalled("renewals failing: told before the validity ends", LEASE_EXPIRY,
                LeaseSection::watchdogMargin, expiry -> {
                    Locker a = realTimeProcess("a", expiry);
                    KeyColumn lock = lock("x-" + expiry.toMillis());
                    Losses losses = new Losses();
                    Lease lease = a.acquire(lock, "job").onLost(losses);
                    fixture().breakBackend();
                    long validUntil;
                    try {
                        validUntil = System.nanoTime() + lease.remaining().toNanos();
                        assertTrue(losses.await(expiry.toMillis() * 4, TimeUnit.MILLISECONDS), "the listener was told");
                    } finally {
                        fixture().repairBackend();
                    }
                    assertEquals(dev.locker.api.LossReason.EXPIRED, losses.told.get(0).reason(),
                            losses.told.get(0).toString());
                    assertFalse(lease.isValid());
                    lease.close();
                    return new Punctuality.Promise(validUntil, losses.toldAt());
                });
    }

    /**
     * A server that lost the holder's claim (restart without its data, failover to a replica that missed it): the
     * holder is told GONE by its next renewal, before its validity ends, and is invalid from then on.
     */
    @Test
    default void aLeaseWhoseClaimTheServerLostIsToldBeforeItsValidityEnds() throws Exception {
        Assumptions.assumeTrue(fixture().canLoseClaims(), "backend cannot lose claims on demand");
        Punctuality.rerunWhileStalled("claim lost by the server: told before the validity ends", LEASE_EXPIRY,
                LeaseSection::watchdogMargin, expiry -> {
                    Locker a = realTimeProcess("a", expiry);
                    KeyColumn lock = lock("x-" + expiry.toMillis());
                    Losses losses = new Losses();
                    Lease lease = a.acquire(lock, "job").onLost(losses);
                    long validUntil = System.nanoTime() + lease.remaining().toNanos();
                    long gone = System.nanoTime();
                    fixture().loseClaims(lock);
                    assertTrue(losses.await(expiry.toMillis() * 3, TimeUnit.MILLISECONDS), "the listener was told");
                    System.out.printf("[conformance] %s: lost signal %d ms after the server lost the claim (expiry %d "
                                    + "ms, %.2f expiries)%n", getClass().getSimpleName(),
                            (losses.toldAt() - gone) / 1_000_000, expiry.toMillis(),
                            (losses.toldAt() - gone) / (double) expiry.toNanos());
                    assertEquals(dev.locker.api.LossReason.GONE, losses.told.get(0).reason(),
                            losses.told.get(0).toString());
                    assertFalse(lease.isValid());
                    assertThrows(ExpiredLockException.class, lease::fencingToken);
                    Thread.sleep(expiry.toMillis() / 2);
                    assertEquals(1, losses.told.size(), "exactly once: " + losses.told);
                    lease.close();
                    take(realTimeProcess("b", expiry), lock, new Object());
                    return new Punctuality.Promise(validUntil, losses.toldAt());
                });
    }

    /**
     * A frozen connection (no byte passes, nothing is reset): renewals hang, and the holder is told EXPIRED before its
     * validity ends, however long the client's own timeouts are; once the claim expired another process takes the
     * lock with a higher token.
     */
    @Test
    default void aLeaseOnAFrozenConnectionIsToldBeforeItsValidityEnds() throws Exception {
        Assumptions.assumeTrue(fixture().canFreezeConnections(), "backend has no connection to freeze");
        Punctuality.rerunWhileStalled("frozen connection: told before the validity ends", LEASE_EXPIRY,
                LeaseSection::watchdogMargin, expiry -> {
                    Locker a = adopt(fixture().openFreezable(config("a").timeSource(TimeSource.system())
                            .expiry(expiry).build()));
                    Locker b = realTimeProcess("b", expiry);
                    KeyColumn lock = lock("x-" + expiry.toMillis());
                    Losses losses = new Losses();
                    Lease lease = a.acquire(lock, "job").onLost(losses);
                    long token = lease.fencingToken();
                    long validUntil;
                    try {
                        long frozeAt = System.nanoTime();
                        fixture().freezeConnections();
                        validUntil = System.nanoTime() + lease.remaining().toNanos();
                        assertTrue(losses.await(expiry.toMillis() * 4, TimeUnit.MILLISECONDS), "the listener was told");
                        System.out.printf("[conformance] %s: lost signal %d ms after the connection froze (expiry %d "
                                        + "ms, %.2f expiries)%n", getClass().getSimpleName(),
                                (losses.toldAt() - frozeAt) / 1_000_000, expiry.toMillis(),
                                (losses.toldAt() - frozeAt) / (double) expiry.toNanos());
                        assertEquals(dev.locker.api.LossReason.EXPIRED, losses.told.get(0).reason(),
                                losses.told.get(0).toString());
                        assertFalse(lease.isValid());
                        dev.locker.api.Acquisition next = b.acquireWithin(lock, "after the claim expired",
                                Duration.ofSeconds(20));
                        assertTrue(next.acquired(), "the frozen holder's claim expired on the server: " + next
                                + next.failure().map(f -> " " + f).orElse(""));
                        assertTrue(next.lease().orElseThrow().fencingToken() > token,
                                "a higher token for the next holder");
                        next.lease().orElseThrow().close();
                    } finally {
                        fixture().thawConnections();
                    }
                    lease.close();
                    assertEquals(1, losses.told.size(), "exactly once: " + losses.told);
                    return new Punctuality.Promise(validUntil, losses.toldAt());
                });
    }

    /** The margin the keep-alive's watchdog leaves before a lease's validity ends: a tenth of its expiry. */
    private static Duration watchdogMargin(Duration expiry) {
        return expiry.dividedBy(10);
    }

    @Test
    default void acquireAllIsAllOrNothingAndNamesTheHolder() {
        Locker a = process("a");
        Locker c = process("c");
        KeyColumn x = lock("x");
        KeyColumn y = lock("y");
        Object tc = new Object();
        take(c, y, tc);
        TemporaryLockingException e = assertThrows(TemporaryLockingException.class,
                () -> a.acquireAll(List.of(x, y), "both"));
        assertEquals(c.rid(), e.holder().rid());
        take(process("b"), x, new Object()); // x was not left claimed
        c.deleteLocks(tc);
        Locker d = process("d");
        try (Lease both = d.acquireAll(List.of(y, lock("z"), y), "set")) {
            assertEquals(2, both.locks().size(), "duplicates count once");
            assertTrue(both.fencingToken(y) > 0);
            assertThrows(IllegalStateException.class, both::fencingToken, "several locks: one token each");
            assertEquals(d.rid(), a.holder(y).orElseThrow().rid());
        }
        assertThrows(IllegalArgumentException.class, () -> a.acquireAll(List.of(), "nothing"));
    }

    /** Two processes asking for the same set in opposite orders: never both inside, never stuck. */
    @Test
    default void acquireAllInOppositeOrdersNeitherDeadlocksNorShares() throws Exception {
        Locker a = process("a");
        Locker b = process("b");
        List<KeyColumn> set = List.of(lock("p"), lock("q"), lock("r"));
        List<KeyColumn> reversed = new ArrayList<>(set);
        java.util.Collections.reverse(reversed);
        AtomicInteger inside = new AtomicInteger();
        List<String> violations = new CopyOnWriteArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<Integer>> runs = new ArrayList<>();
            for (Object[] who : new Object[][]{{a, set}, {b, reversed}}) {
                Locker l = (Locker) who[0];
                @SuppressWarnings("unchecked")
                List<KeyColumn> order = (List<KeyColumn>) who[1];
                runs.add(pool.submit(() -> {
                    int done = 0;
                    for (int i = 0; i < 40 && done < 5; i++) {
                        Optional<Lease> lease = l.tryAcquireAll(order, "set", Duration.ZERO);
                        if (lease.isEmpty()) {
                            Thread.sleep(ThreadLocalRandom.current().nextInt(3));
                            continue;
                        }
                        try (Lease held = lease.get()) {
                            if (inside.incrementAndGet() != 1) {
                                violations.add("both inside at round " + i);
                            }
                            Thread.sleep(1);
                            inside.decrementAndGet();
                            done++;
                        }
                    }
                    return done;
                }));
            }
            int total = 0;
            for (Future<Integer> f : runs) {
                total += f.get(100, TimeUnit.SECONDS);
            }
            assertEquals(List.of(), violations);
            assertTrue(total > 0, "the set was taken at all");
        } finally {
            pool.shutdownNow();
        }
    }

    /** A lease on several locks tells its listener once when its locker closes, not once per lock. */
    @Test
    default void aLeaseOnSeveralLocksTellsItsListenerOnce() throws Exception {
        Locker a = process("a");
        Lease lease = a.acquireAll(List.of(lock("x"), lock("y")), "both");
        List<LockLost> told = new CopyOnWriteArrayList<>();
        lease.onLost(told::add);
        a.close(); // both locks lost (LOCKER_CLOSED); close waits for the notifier (briefly)
        awaitSize(told, 1);
        Thread.sleep(200); // any further call is made by now (close awaited the notifier already)
        assertEquals(1, told.size(), "the lease's listener was told once; it was told " + told);
    }

    /**
     * A lost-listener that re-enters the locker (closes its lease, acquires another lock, even closes the locker)
     * neither deadlocks nor breaks it; a listener that throws a RuntimeException does not stop the next one.
     */
    @Test
    default void aListenerThatReentersTheLockerNeitherDeadlocksNorBreaksIt() throws Exception {
        Locker a = process("a");
        KeyColumn lock = lock("x");
        Lease first = a.acquire(lock, "first").keepAlive(false);
        List<String> seen = new CopyOnWriteArrayList<>();
        CountDownLatch secondAcquired = new CountDownLatch(1);
        first.onLost(l -> {
            throw new IllegalStateException("a listener's own failure");
        });
        first.onLost(l -> {
            first.close(); // releasing from the listener
            try {
                seen.add("reacquire: " + a.tryAcquire(lock("other"), "in listener", Duration.ZERO)
                        .map(lease -> {
                            lease.close();
                            return "ok";
                        }).orElse("busy"));
            } catch (RuntimeException e) {
                seen.add("reacquire failed: " + e);
            }
            try {
                // the listener runs while the main thread's acquire goes on: the close waits for its end (else the
                // acquire fails, "the locker was closed", which is right but not this test's point)
                secondAcquired.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            a.close(); // closing the locker from its own notifier thread
            seen.add("closed");
        });
        pass(expiry().plusSeconds(1));
        Lease second = a.acquire(lock, "second"); // takes over: first is lost
        secondAcquired.countDown();
        assertTrue(awaitSize(seen, 2), "the re-entering listener ran to its end: " + seen);
        assertEquals(List.of("reacquire: ok", "closed"), seen);
        assertFalse(second.isValid(), "the locker closed from the listener closed the second lease too");
        assertThrows(IllegalStateException.class, () -> a.acquire(lock, "after"));
        second.close();
    }

    /**
     * A renewal whose probe throws a checked exception undeclared (a Kotlin metrics exporter) must not stop keep-alive.
     * A lease acquired afterwards on the same locker is still renewed, and never declared lost.
     */
    @Test
    default void oneThrowableOnTheKeepAliveThreadLeavesLaterLeasesRenewed() throws Exception {
        AtomicBoolean thrown = new AtomicBoolean();
        CountDownLatch threw = new CountDownLatch(1);
        KeyColumn firstLock = lock("first");
        LockProbe probe = new LockProbe() {
            @Override
            public void before(Step step, KeyColumn lock, String rid) {
                if (step == Step.RENEW && lock.equals(firstLock) && thrown.compareAndSet(false, true)) {
                    threw.countDown();
                    LeaseSection.<RuntimeException>sneaky(new java.io.IOException("metrics exporter unreachable"));
                }
            }
        };
        Duration expiry = Duration.ofMillis(1500);
        Locker l = open(config("keep-alive").timeSource(TimeSource.system()).expiry(expiry).probe(probe).build());
        Lease first = l.acquire(firstLock, "first");
        assertTrue(threw.await(20, TimeUnit.SECONDS), "the first renewal ran");
        Thread.sleep(100);
        Lease later = l.acquire(lock("later"), "later");
        List<LockLost> lost = new CopyOnWriteArrayList<>();
        later.onLost(lost::add);
        Thread.sleep(expiry.toMillis() * 3); // nine renewal periods
        assertTrue(lost.isEmpty() && later.remaining().compareTo(Duration.ZERO) > 0,
                "a lease acquired after one renewal threw was never renewed: " + lost);
        later.close();
        first.close();
    }

    /**
     * The monotonic clock is only ever compared by difference: a time source whose nanoTime wraps past
     * Long.MAX_VALUE half a second after the lease is taken (the real clock, shifted) keeps the lease renewed for
     * three expiries, with no false loss from the watchdog and a positive remaining time.
     */
    @Test
    default void aLeaseIsKeptAliveAcrossAWrapOfTheMonotonicClock() throws Exception {
        long shift = Long.MAX_VALUE - System.nanoTime() - TimeUnit.MILLISECONDS.toNanos(500);
        TimeSource wrapping = new TimeSource() {
            @Override
            public java.time.Instant now() {
                return java.time.Instant.now();
            }

            @Override
            public long nanoTime() {
                return System.nanoTime() + shift; // overflows half a second from now
            }

            @Override
            public void sleep(Duration d) throws InterruptedException {
                TimeUnit.NANOSECONDS.sleep(d.toNanos());
            }
        };
        Duration expiry = Duration.ofMillis(1500);
        // a lockWait a loaded backend's write fits in: this case is about the wrap, not about a write's latency
        Locker l = open(config("wrap").expiry(expiry).lockWait(Duration.ofMillis(100)).timeSource(wrapping).build());
        Lease lease = l.acquire(lock("wrap"), "wrap");
        List<LockLost> lost = new CopyOnWriteArrayList<>();
        lease.onLost(lost::add);
        Thread.sleep(expiry.toMillis() * 3);
        assertTrue(wrapping.nanoTime() < 0, "the clock wrapped");
        assertTrue(lost.isEmpty(), "no loss across the wrap: " + lost);
        assertTrue(lease.remaining().compareTo(Duration.ZERO) > 0);
        lease.check();
        lease.close();
    }

    /** Throws any throwable, checked or not, without declaring it (what Kotlin, Groovy or Lombok code does). */
    @SuppressWarnings("unchecked")
    private static <T extends Throwable> void sneaky(Throwable t) throws T {
        throw (T) t;
    }
}
