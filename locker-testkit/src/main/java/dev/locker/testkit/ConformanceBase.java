package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import dev.locker.api.TimeSource;
import dev.locker.spi.KeyColumnValueStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * One backend under the conformance sections it opts into: a test class extends this, provides a
 * {@link LockerFixture}, and implements the sections (or extends {@link LockerConformanceSuite} for all of them).
 *
 * <p>Backends whose expiry follows the configured clock run on a {@link VirtualClock} (milliseconds per scenario);
 * the others run on the system clock with a short expiry.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public abstract class ConformanceBase implements ConformanceScenario {

    /** The backend under test; called once per test class. */
    protected abstract LockerFixture createFixture() throws Exception;

    /**
     * An expected-value-checking store guarded by {@code locker}, over a data store of the backend's choice that is
     * the SAME for every call within a test class (two contenders must see one another's data); null (the default)
     * skips the expected-value scenarios.
     */
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return null;
    }

    protected LockerFixture fixture;
    protected TimeSource clock;
    protected VirtualClock virtualClock;
    private final List<Locker> opened = new CopyOnWriteArrayList<>();
    private String prefix;
    private final ExecutorService stepPool = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "paused-process");
        t.setDaemon(true);
        return t;
    });

    @BeforeAll
    void startBackend() throws Exception {
        fixture = createFixture();
    }

    @AfterAll
    void stopBackend() throws Exception {
        if (fixture != null) {
            fixture.close();
        }
    }

    @BeforeEach
    void freshScenario(TestInfo info) {
        if (fixture.expiryFollowsConfiguredClock()) {
            virtualClock = new VirtualClock();
            clock = virtualClock;
        } else {
            virtualClock = null;
            clock = TimeSource.system();
        }
        prefix = info.getTestMethod().map(m -> m.getName()).orElse("t") + "-" + LockerConfig.randomRid().substring(0, 8) + "/";
    }

    @AfterEach
    void closeLockers() {
        for (Locker l : opened) {
            try {
                l.close();
            } catch (RuntimeException e) {
                // a scenario may have broken the backend; closing is best effort
            }
        }
        opened.clear();
    }

    // ---- scenario vocabulary ------------------------------------------------------------------------------------

    @Override
    public LockerFixture fixture() {
        return fixture;
    }

    @Override
    public TimeSource clock() {
        return clock;
    }

    @Override
    public VirtualClock virtualClock() {
        return virtualClock;
    }

    @Override
    public String prefix() {
        return prefix;
    }

    @Override
    public Duration expiry() {
        return fixture.expiryFollowsConfiguredClock() ? Duration.ofSeconds(30) : Duration.ofMillis(1500);
    }

    @Override
    public LockerConfig.Builder config(String name) {
        return LockerConfig.builder()
                .rid(name + "-" + LockerConfig.randomRid().substring(0, 12))
                .host("host-" + name)
                .pid(4242)
                .expiry(expiry())
                .lockWait(Duration.ofMillis(fixture.expiryFollowsConfiguredClock() ? 100 : 20))
                .timeSource(clock);
    }

    @Override
    public Locker process(String name) {
        return open(config(name).build());
    }

    @Override
    public Locker open(LockerConfig config) {
        return adopt(fixture.open(config));
    }

    @Override
    public Locker adopt(Locker locker) {
        opened.add(locker);
        return locker;
    }

    @Override
    public KeyColumn lock(String name) {
        return KeyColumn.of(prefix + name, "c");
    }

    @Override
    public void pass(Duration d) throws InterruptedException {
        if (virtualClock != null) {
            virtualClock.advance(d);
        } else {
            Thread.sleep(d.toMillis());
        }
    }

    @Override
    public Locker pausable(String name, StepPauses pauses) {
        return open(config(name).probe(pauses).build());
    }

    @Override
    public ExecutorService stepPool() {
        return stepPool;
    }

    @Override
    public KeyColumnValueStore expectedValueCheckingStore(Locker locker) {
        KeyColumnValueStore s = expectedValueChecking(locker);
        Assumptions.assumeTrue(s != null, "no expected-value-checking store for this backend");
        return s;
    }

    /** writeLock then checkLocks; on failure the transaction's locks are released and the failure rethrown. */
    protected static void take(Locker locker, KeyColumn lock, Object tx) {
        Scenarios.take(locker, lock, tx);
    }

    protected static TemporaryLockingException assertContended(Locker locker, KeyColumn lock, Object tx) {
        return Scenarios.assertContended(locker, lock, tx);
    }

    /** Every page of a listing from {@code cursor} on; each page holds at most {@code limit} locks. */
    protected static List<LockInfo> listAll(Locker locker, byte[] keyPrefix, int limit, String cursor) {
        return Scenarios.listAll(locker, keyPrefix, limit, cursor);
    }

    /** Fails the scenario with a message; for backends' own tests. */
    protected static void failWith(String message) {
        fail(message);
    }
}
