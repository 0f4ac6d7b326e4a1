package dev.locker.engine;

import dev.locker.spi.Entry;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.Isolated;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** An Error from one claim's deletion keeps no other claim of the same release, or of close, on the backend. */
@Isolated // counts the JVM's threads
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DeletionErrorTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private final VirtualClock clock = new VirtualClock();
    private final ErrorStore store = new ErrorStore(new InMemoryStore("deletion-error"));
    private final List<Locker> lockers = new ArrayList<>();
    private final KeyColumn x = KeyColumn.of("core", "x");
    private final KeyColumn y = KeyColumn.of("core", "y");

    @AfterEach
    void tearDown() {
        lockers.forEach(Locker::close);
    }

    private Locker locker(String rid) {
        Locker l = ConsistentKeyLocker.builder(store).config(LockerConfig.builder().rid(rid).expiry(EXPIRY)
                .lockWait(Duration.ofMillis(100)).scrubExpired(false).timeSource(clock).build()).build();
        lockers.add(l);
        return l;
    }

    /** How many claims {@code l}'s row holds (record and token columns, from 0xfe on, aside). */
    private long claims(KeyColumn l) {
        byte[] end = new byte[64];
        Arrays.fill(end, (byte) 0xff);
        KeyColumnValueStore real = store.real;
        List<Entry> row = real.getSlice(l.encoded(), new byte[0], end, real.beginTransaction());
        return row.stream().filter(e -> e.column().length == 0 || (e.column()[0] & 0xff) < 0xfe).count();
    }

    /** Runs {@code r}, swallowing the Error the test injected: what counts is what it leaves behind. */
    private static void ignoringInjectedError(Runnable r) {
        try {
            r.run();
        } catch (NoClassDefFoundError injected) {
            // the injected Error may reach the caller; the claims it should not strand are checked after
        }
    }

    /**
     * Given a lease on two locks whose first deletion fails with an Error, closing it still deletes the other claim:
     * only the claim whose deletion failed is left to expire.
     */
    @Test
    void anErrorDeletingOneClaimOfALeaseStillDeletesItsOtherClaims() {
        Locker a = locker("a");
        Lease both = a.acquireAll(List.of(x, y), "both").keepAlive(false);
        store.failMutation(0, new NoClassDefFoundError("a class of the backend's driver"));
        ignoringInjectedError(both::close);
        assertEquals(1, claims(x) + claims(y), "only the claim whose deletion failed is left; x: " + claims(x)
                + ", y: " + claims(y));
    }

    /**
     * Given two leases of one locker and an Error from the first deletion of its close, the close still deletes the
     * other lease's claim and leaves no thread of the locker running.
     */
    @Test
    void anErrorDeletingOneClaimOnCloseStillDeletesTheOthersAndStopsTheLockersThreads() throws Exception {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        Locker a = locker("a");
        a.acquire(x, "first");
        a.acquire(y, "second"); // both kept alive: the locker's background threads run
        store.failMutation(0, new NoClassDefFoundError("a class of the backend's driver"));
        ignoringInjectedError(a::close);
        assertEquals(1, claims(x) + claims(y), "only the claim whose deletion failed is left; x: " + claims(x)
                + ", y: " + claims(y));
        List<String> left = List.of();
        for (int i = 0; i < 500; i++) {
            left = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> !before.contains(t) && t.isAlive() && t.getName().startsWith("locker-"))
                    .map(Thread::getName).toList();
            if (left.isEmpty()) {
                break;
            }
            Thread.sleep(10);
        }
        assertEquals(List.of(), left, "threads of the closed locker still run");
    }
}
