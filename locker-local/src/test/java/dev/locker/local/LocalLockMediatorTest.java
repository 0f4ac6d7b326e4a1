package dev.locker.local;

import dev.locker.api.KeyColumn;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LocalLockMediatorTest {

    private final VirtualClock clock = new VirtualClock();
    private final LocalLockMediator m = LocalLockMediator.standalone("test", clock);
    private final KeyColumn lock = KeyColumn.of("k", "c");

    @Test
    void onlyOneTransactionHoldsALiveRecord() {
        Object t1 = new Object();
        Object t2 = new Object();
        assertTrue(m.lock(lock, t1, clock.now().plusSeconds(10)));
        assertFalse(m.lock(lock, t2, clock.now().plusSeconds(10)));
        assertSame(t1, m.holder(lock).orElseThrow());
    }

    @Test
    void anExpiredRecordIsTakenOver() {
        Object t1 = new Object();
        Object t2 = new Object();
        m.lock(lock, t1, clock.now().plusSeconds(10));
        clock.advance(Duration.ofSeconds(11));
        assertTrue(m.lock(lock, t2, clock.now().plusSeconds(10)));
        assertFalse(m.unlock(lock, t1), "the former holder cannot unlock the new holder's record");
        assertSame(t2, m.holder(lock).orElseThrow());
    }

    @Test
    void onlyTheHolderUnlocks() {
        Object t1 = new Object();
        m.lock(lock, t1, clock.now().plusSeconds(10));
        assertFalse(m.unlock(lock, new Object()));
        assertTrue(m.unlock(lock, t1));
        assertFalse(m.unlock(lock, t1));
        assertEquals(0, m.size());
    }

    @Test
    void relockByTheHolderUpdatesTheExpiry() {
        Object t1 = new Object();
        m.lock(lock, t1, clock.now().plusSeconds(10));
        assertTrue(m.lock(lock, t1, clock.now().plusSeconds(100)));
        clock.advance(Duration.ofSeconds(50));
        assertFalse(m.lock(lock, new Object(), clock.now().plusSeconds(10)), "the extended record is still live");
    }

    @Test
    void transactionsAreComparedByIdentity() {
        Object t1 = "tx";
        Object t2 = new String("tx");
        m.lock(lock, t1, clock.now().plusSeconds(10));
        assertFalse(m.lock(lock, t2, clock.now().plusSeconds(10)), "equal but not the same transaction");
    }

    @Test
    void racingThreadsNeverShareALock() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        AtomicInteger winners = new AtomicInteger();
        for (int i = 0; i < 8; i++) {
            pool.submit(() -> {
                if (m.lock(lock, new Object(), clock.now().plusSeconds(10))) {
                    winners.incrementAndGet();
                }
            });
        }
        pool.shutdown();
        assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
        assertEquals(1, winners.get());
    }

    @Test
    void mediatorGroupsAreInjectableNotGlobal() {
        try (LocalLockMediators g1 = new LocalLockMediators(clock); LocalLockMediators g2 = new LocalLockMediators(clock)) {
            assertSame(g1.forNamespace("ns"), g1.forNamespace("ns"));
            assertNotSame(g1.forNamespace("ns"), g2.forNamespace("ns"));
        }
    }
}
