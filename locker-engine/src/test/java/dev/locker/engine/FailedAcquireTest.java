package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.Entry;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

/** An acquire that fails with a backend's Error leaves no claim and no local entry behind, like any failure. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FailedAcquireTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private static final Duration LOCK_WAIT = Duration.ofMillis(100);

    private final VirtualClock clock = new VirtualClock();

    private final ErrorStore store = new ErrorStore(new InMemoryStore("failed-acquire"));

    private final List<LockProbe.Step> steps = new CopyOnWriteArrayList<>();

    private final List<Locker> lockers = new ArrayList<>();

    private final KeyColumn x = KeyColumn.of("core", "x");

    private final KeyColumn y = KeyColumn.of("core", "y");

    @AfterEach
    void tearDown() {
        lockers.forEach(Locker::close);
    }

    /** A wait-and-read-back locker that records each step it begins. */
    private Locker locker(String rid) {
        LockProbe probe = new LockProbe() {
            @Override
            public void before(Step step, KeyColumn lock, String r) {
                steps.add(step);
            }
        };
        Locker l = ConsistentKeyLocker.builder(store).config(LockerConfig.builder().rid(rid).expiry(EXPIRY)
                .lockWait(LOCK_WAIT).scrubExpired(false).timeSource(clock).probe(probe).build()).build();
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

    /** Acquires {@code lock} again at once; fails the test, naming what was left, if it cannot. */
    private static void acquireAgain(Locker l, KeyColumn lock) {
        try (Lease again = l.acquire(lock, "again")) {
            again.fencingToken();
        } catch (TemporaryLockingException e) {
            fail("the failed acquire left " + lock + " held: " + e.getMessage());
        }
    }

    @Test
    void anAcquireWhoseWriteFailsWithAnErrorLeavesTheLockFree() {
        Locker a = locker("a");
        store.failMutation(0, new NoClassDefFoundError("a class of the backend's driver"));
        assertThrows(NoClassDefFoundError.class, () -> a.acquire(x, "its write fails"));
        assertEquals(LockProbe.Step.WRITE, steps.get(steps.size() - 1), "the Error came from the write: " + steps);
        assertEquals(0, claims(x), "the failed write left a claim");
        acquireAgain(a, x);
    }

    @Test
    void anAcquireWhoseCheckFailsWithAnErrorLeavesTheLockFree() {
        Locker a = locker("a");
        store.failRead(new NoClassDefFoundError("a class of the backend's driver"));
        assertThrows(NoClassDefFoundError.class, () -> a.acquire(x, "its read-back fails"));
        assertEquals(List.of(LockProbe.Step.WRITE, LockProbe.Step.CHECK, LockProbe.Step.RELEASE), steps,
                "the Error came from the check, and the claim was released");
        acquireAgain(a, x);
        assertEquals(0, claims(x), "the failed acquire's claim is still in the store");
    }

    @Test
    void anAcquireAllWhoseSecondWriteFailsWithAnErrorLeavesTheFirstLockFree() {
        Locker a = locker("a");
        store.failMutation(1, new NoClassDefFoundError("a class of the backend's driver"));
        assertThrows(NoClassDefFoundError.class, () -> a.acquireAll(List.of(x, y), "its second write fails"));
        assertEquals(List.of(LockProbe.Step.WRITE, LockProbe.Step.WRITE, LockProbe.Step.RELEASE), steps,
                "two writes, no check, and the first claim released");
        acquireAgain(a, x);
        assertEquals(0, claims(x), "the first lock's claim is still in the store");
    }
}
