package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** acquireAll is all or nothing, even when every reply to one of its writes was lost. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class AcquireAllTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final VirtualClock clock = new VirtualClock();

    private final InMemoryStore shared = new InMemoryStore("shared");

    private final ExecutorService pool = Executors.newCachedThreadPool();

    private final List<Locker> lockers = new ArrayList<>();

    private final KeyColumn lock = KeyColumn.of("core", "c");

    private final KeyColumn x = KeyColumn.of("core", "x");

    private final KeyColumn y = KeyColumn.of("core", "y");

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        lockers.forEach(Locker::close);
    }

    private LockerConfig.Builder config(String rid) {
        return LockerConfig.builder().rid(rid).expiry(EXPIRY).lockWait(LOCK_WAIT).timeSource(clock);
    }

    private Locker locker(KeyColumnValueStore store, LockerConfig config) {
        Locker l = ConsistentKeyLocker.builder(store).config(config).build();
        lockers.add(l);
        return l;
    }

    private Locker locker(String rid) {
        return locker(shared, config(rid).build());
    }

    /** How many claims {@code lock}'s row holds (record and token columns, from 0xfe on, aside). */
    private long claims(KeyColumn l) {
        byte[] end = new byte[64];
        Arrays.fill(end, (byte) 0xff);
        List<Entry> row = shared.getSlice(l.encoded(), new byte[0], end, shared.beginTransaction());
        return row.stream().filter(e -> e.column().length == 0 || (e.column()[0] & 0xff) < 0xfe).count();
    }

    /**
     * acquireAll all-or-nothing with a lost reply: y's claim write lands on every attempt but each reply is lost, so
     * the acquire fails; nothing stays held: no claim of x or y in the store, no mediator entry, no transaction.
     */
    @Test
    void acquireAllWhoseSecondWriteLostEveryReplyLeavesNothingHeld() {
        FaultyStore fa = new FaultyStore(shared);
        Locker a = locker(fa, config("a").build());
        fa.scriptMutations(FaultyStore.Outcome.OK, // x's claim
                FaultyStore.Outcome.APPLIED_THEN_TEMPORARY_FAILURE, // y's claim: written, reply lost (3 attempts)
                FaultyStore.Outcome.APPLIED_THEN_TEMPORARY_FAILURE,
                FaultyStore.Outcome.APPLIED_THEN_TEMPORARY_FAILURE);
        assertThrows(TemporaryLockingException.class, () -> a.acquireAll(List.of(x, y), "both"));
        assertEquals(0, claims(x), "no claim of x left");
        assertEquals(0, claims(y), "no claim of y left (every attempt was deleted)");
        assertEquals(0, ((LocalLockMediator) a.arbitration()).size(), "no mediator entry left");
        Locker b = locker("b");
        b.acquireAll(List.of(x, y), "b").close(); // free for another process
    }
}
