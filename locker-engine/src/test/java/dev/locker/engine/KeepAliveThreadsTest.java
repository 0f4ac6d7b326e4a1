package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockLost;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LossReason;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The keep-alive's threads: a blocked listener or a stalled renewal delays no other lease; renewals outlive Errors. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class KeepAliveThreadsTest {

    private static Locker locker(String store, VirtualClock clock, Duration expiry, LockProbe probe) {
        return ConsistentKeyLocker.builder(new InMemoryStore(store)).config(LockerConfig.builder().rid("a")
                .expiry(expiry).scrubExpired(false).timeSource(clock).probe(probe).build()).build();
    }

    /** Waits (boundedly, on the real clock) until {@code condition} holds; false if it never did. */
    private static boolean eventually(BooleanSupplier condition) throws InterruptedException {
        for (int i = 0; i < 1_000 && !condition.getAsBoolean(); i++) {
            Thread.sleep(10);
        }
        return condition.getAsBoolean();
    }

    @Test
    void aListenerThatBlocksDelaysNoOtherLeasesLostSignal() throws Exception {
        VirtualClock clock = new VirtualClock();
        CountDownLatch stuck = new CountDownLatch(1);
        CountDownLatch blocking = new CountDownLatch(1);
        List<LockLost> toldB = new CopyOnWriteArrayList<>();
        KeyColumn lockA = KeyColumn.of("a", "c");
        KeyColumn lockB = KeyColumn.of("b", "c");
        try (Locker a = locker("keepalive-blocking-listener", clock, Duration.ofSeconds(10), LockProbe.NONE)) {
            Lease leaseA = a.acquire(lockA, "its listener blocks").keepAlive(false);
            Lease leaseB = a.acquire(lockB, "its listener must be told").keepAlive(false);
            leaseA.onLost(loss -> {
                blocking.countDown();
                try {
                    stuck.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            leaseB.onLost(toldB::add);
            try {
                clock.advance(Duration.ofSeconds(11)); // both past their deadlines, not renewed
                Lease takesA = a.acquire(lockA, "takes A over"); // A is lost: its listener blocks
                assertTrue(blocking.await(10, TimeUnit.SECONDS), "A's listener was told");
                Lease takesB = a.acquire(lockB, "takes B over"); // B is lost: its listener is told anyway
                assertTrue(eventually(() -> !toldB.isEmpty()), "B's lost signal waits behind A's blocked listener");
                assertEquals(LossReason.EXPIRED, toldB.get(0).reason());
                takesA.close();
                takesB.close();
            } finally {
                stuck.countDown();
            }
        }
    }

    @Test
    void theLossesOfOneLeaseAreToldOnceEachInTheOrderTheyCame() throws Exception {
        VirtualClock clock = new VirtualClock();
        CountDownLatch firstTold = new CountDownLatch(1);
        CountDownLatch letFirstEnd = new CountDownLatch(1);
        List<String> told = new CopyOnWriteArrayList<>();
        KeyColumn lock = KeyColumn.of("k", "c");
        try (Locker a = locker("keepalive-order", clock, Duration.ofSeconds(10), LockProbe.NONE)) {
            Lease lease = a.acquire(lock, "lost").keepAlive(false);
            lease.onLost(loss -> {
                told.add("first");
                firstTold.countDown();
                try {
                    letFirstEnd.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                told.add("first done");
            });
            clock.advance(Duration.ofSeconds(11));
            Lease next = a.acquire(lock, "takes it over");
            assertTrue(firstTold.await(10, TimeUnit.SECONDS));
            lease.onLost(loss -> told.add("second")); // already lost: told at once, but after the first
            Thread.sleep(100); // a chance for a wrong order to show; nothing is timed
            letFirstEnd.countDown();
            assertTrue(eventually(() -> told.size() == 3), told.toString());
            Thread.sleep(100);
            assertEquals(List.of("first", "first done", "second"), told, "in order, once each");
            next.close();
        }
    }

    /** Throws {@code error} from the first renewal; counts the renewals that succeed. */
    private static final class FailingRenewal implements LockProbe {
        final AtomicInteger thrown = new AtomicInteger();
        final AtomicInteger renewed = new AtomicInteger();
        final Error error;

        FailingRenewal(Error error) {
            this.error = error;
        }

        @Override
        public void before(Step step, KeyColumn lock, String rid) {
            if (step == Step.RENEW && thrown.compareAndSet(0, 1)) {
                throw error;
            }
        }

        @Override
        public void after(Step step, KeyColumn lock, String rid, RuntimeException failure) {
            if (step == Step.RENEW && failure == null) {
                renewed.incrementAndGet();
            }
        }
    }

    @Test
    void aRenewalThatThrowsAnErrorIsRetriedLikeAnyFailure() throws Exception {
        VirtualClock clock = new VirtualClock(); // never moves: only renewals, on the real clock, are due
        FailingRenewal probe = new FailingRenewal(new NoClassDefFoundError("a class of the backend's driver"));
        List<LockLost> told = new CopyOnWriteArrayList<>();
        try (Locker a = locker("keepalive-error", clock, Duration.ofSeconds(3), probe);
             Lease lease = a.acquire(KeyColumn.of("k", "c"), "kept alive")) {
            lease.onLost(told::add);
            assertTrue(eventually(() -> probe.thrown.get() == 1), "the first renewal ran");
            assertTrue(eventually(() -> probe.renewed.get() > 0), "after the Error the keep-alive never renewed again");
            assertTrue(lease.isValid());
            assertTrue(told.isEmpty(), told.toString());
        }
    }

    @Test
    void aRenewalThatThrowsAVirtualMachineErrorTellsTheHolderItsLeaseIsLost() throws Exception {
        VirtualClock clock = new VirtualClock();
        FailingRenewal probe = new FailingRenewal(new OutOfMemoryError("thrown by the test"));
        List<LockLost> told = new CopyOnWriteArrayList<>();
        try (Locker a = locker("keepalive-vm-error", clock, Duration.ofSeconds(3), probe);
             Lease lease = a.acquire(KeyColumn.of("k", "c"), "kept alive")) {
            lease.onLost(told::add);
            assertTrue(eventually(() -> !told.isEmpty()), "the holder was never told its lease is no longer kept");
            assertEquals(LossReason.EXPIRED, told.get(0).reason());
            assertFalse(lease.isValid());
        }
    }

    @Test
    void ninthLeasesLostSignalIsToldWhileEightOtherLeasesListenersBlock() throws Exception {
        VirtualClock clock = new VirtualClock();
        int blocked = KeepAlive.NOTIFIERS;
        CountDownLatch stuck = new CountDownLatch(1);
        CountDownLatch blocking = new CountDownLatch(blocked);
        List<LockLost> toldLast = new CopyOnWriteArrayList<>();
        List<Lease> takers = new ArrayList<>();
        try (Locker a = locker("keepalive-saturated-listeners", clock, Duration.ofSeconds(10), LockProbe.NONE)) {
            List<KeyColumn> locks = new ArrayList<>();
            List<Lease> leases = new ArrayList<>();
            for (int i = 0; i <= blocked; i++) {
                locks.add(KeyColumn.of("saturated-" + i, "c"));
                leases.add(a.acquire(locks.get(i), "lease " + i).keepAlive(false));
            }
            for (int i = 0; i < blocked; i++) {
                leases.get(i).onLost(loss -> {
                    blocking.countDown();
                    try {
                        stuck.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
            }
            leases.get(blocked).onLost(toldLast::add);
            try {
                clock.advance(Duration.ofSeconds(11)); // every lease past its deadline, none renewed
                for (int i = 0; i < blocked; i++) {
                    takers.add(a.acquire(locks.get(i), "takes lease " + i + " over"));
                }
                assertTrue(blocking.await(10, TimeUnit.SECONDS), "the listeners of the first leases were told");
                takers.add(a.acquire(locks.get(blocked), "takes the last lease over"));
                assertTrue(eventually(() -> !toldLast.isEmpty()), "the last lease's lost signal waits behind "
                        + blocked + " blocked listeners of other leases");
                assertEquals(LossReason.EXPIRED, toldLast.get(0).reason());
            } finally {
                stuck.countDown();
                takers.forEach(Lease::close);
            }
        }
    }

    @Test
    void aLockerClosedWhileEightListenersBlockTellsItsOtherLeasesTheirLoss() throws Exception {
        VirtualClock clock = new VirtualClock();
        int blocked = KeepAlive.NOTIFIERS;
        CountDownLatch stuck = new CountDownLatch(1);
        CountDownLatch blocking = new CountDownLatch(blocked);
        List<LockLost> toldLast = new CopyOnWriteArrayList<>();
        Locker a = locker("keepalive-closed-saturated", clock, Duration.ofSeconds(10), LockProbe.NONE);
        try {
            List<KeyColumn> locks = new ArrayList<>();
            List<Lease> leases = new ArrayList<>();
            for (int i = 0; i <= blocked; i++) {
                locks.add(KeyColumn.of("closed-saturated-" + i, "c"));
                leases.add(a.acquire(locks.get(i), "lease " + i).keepAlive(false));
            }
            for (int i = 0; i < blocked; i++) {
                leases.get(i).onLost(loss -> {
                    blocking.countDown();
                    try {
                        stuck.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
            }
            leases.get(blocked).onLost(toldLast::add);
            clock.advance(Duration.ofSeconds(11));
            for (int i = 0; i < blocked; i++) {
                a.acquire(locks.get(i), "takes lease " + i + " over");
            }
            assertTrue(blocking.await(10, TimeUnit.SECONDS), "the listeners of the first leases were told");
            a.close(); // the last lease is lost with its locker
            assertTrue(eventually(() -> !toldLast.isEmpty()), "the last lease was never told its locker closed");
        } finally {
            stuck.countDown();
            a.close();
        }
    }

    /** A store whose mutations of one row wait, while {@code stalled} is armed, until it is counted down. */
    private static final class StallingStore implements dev.locker.spi.KeyColumnValueStore {
        private final InMemoryStore real = new InMemoryStore("keepalive-stalled-renewal");
        private volatile byte[] stalledRow;
        private final CountDownLatch stalled = new CountDownLatch(1);
        private final CountDownLatch reached = new CountDownLatch(1);

        @Override
        public String name() {
            return real.name();
        }

        @Override
        public List<dev.locker.spi.Entry> getSlice(byte[] key, byte[] start, byte[] end,
                dev.locker.spi.StoreTransaction tx) {
            return real.getSlice(key, start, end, tx);
        }

        @Override
        public List<byte[]> getKeys(byte[] keyPrefix, byte[] startAfter, int limit,
                dev.locker.spi.StoreTransaction tx) {
            return real.getKeys(keyPrefix, startAfter, limit, tx);
        }

        @Override
        public void mutate(byte[] key, List<dev.locker.spi.Entry> additions, List<byte[]> deletions,
                dev.locker.spi.StoreTransaction tx) {
            if (java.util.Arrays.equals(key, stalledRow)) {
                reached.countDown();
                try {
                    stalled.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            real.mutate(key, additions, deletions, tx);
        }

        @Override
        public dev.locker.spi.StoreTransaction beginTransaction() {
            return real.beginTransaction();
        }

        @Override
        public void close() {
            real.close();
        }
    }

    @Test
    void aRenewalThatStallsDelaysNoOtherLeasesRenewal() throws Exception {
        Duration expiry = Duration.ofMillis(1_500);
        StallingStore store = new StallingStore();
        KeyColumn lockA = KeyColumn.of("stalled", "c");
        KeyColumn lockB = KeyColumn.of("healthy", "c");
        List<LockLost> toldB = new CopyOnWriteArrayList<>();
        try (Locker a = ConsistentKeyLocker.builder(store).config(LockerConfig.builder().rid("a").expiry(expiry)
                .lockWait(Duration.ofMillis(10)).timeSource(dev.locker.api.TimeSource.system()).build()).build()) {
            Lease leaseA = a.acquire(lockA, "its renewal stalls");
            Lease leaseB = a.acquire(lockB, "its renewal must go on");
            leaseB.onLost(toldB::add);
            store.stalledRow = lockA.encoded();
            try {
                assertTrue(store.reached.await(10, TimeUnit.SECONDS), "A's renewal reached the store");
                Thread.sleep(expiry.multipliedBy(2).toMillis()); // B's claim ends unless it is renewed meanwhile
                assertTrue(toldB.isEmpty(), "B was lost while A's renewal stalled: " + toldB);
                assertTrue(leaseB.isValid(), "B is no longer valid while A's renewal stalled");
                leaseB.check();
            } finally {
                store.stalled.countDown();
            }
            leaseB.close();
            leaseA.close();
        }
    }
}
