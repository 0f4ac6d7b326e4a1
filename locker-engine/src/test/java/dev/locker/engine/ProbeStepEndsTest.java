package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The probe hears the end of every backend step it heard begin, however the step fails. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ProbeStepEndsTest {

    private final VirtualClock clock = new VirtualClock();

    private final ErrorStore store = new ErrorStore(new InMemoryStore("probe-step-ends"));

    /** "before STEP" and "after STEP" for each call, in order. */
    private final List<String> told = new CopyOnWriteArrayList<>();

    private final List<Locker> lockers = new ArrayList<>();

    private final KeyColumn lock = KeyColumn.of("core", "c");

    @AfterEach
    void tearDown() {
        lockers.forEach(Locker::close);
    }

    private Locker locker() {
        LockProbe probe = new LockProbe() {
            @Override
            public void before(Step step, KeyColumn l, String rid) {
                told.add("before " + step);
            }

            @Override
            public void after(Step step, KeyColumn l, String rid, RuntimeException failure) {
                told.add("after " + step);
            }
        };
        Locker l = ConsistentKeyLocker.builder(store).config(LockerConfig.builder().rid("a")
                .expiry(Duration.ofSeconds(30)).lockWait(Duration.ofMillis(100)).scrubExpired(false).timeSource(clock)
                .probe(probe).build()).build();
        lockers.add(l);
        return l;
    }

    private long count(String what) {
        return told.stream().filter(what::equals).count();
    }

    @Test
    void aRenewalThatFailsWithAnErrorEndsItsStepForTheProbe() {
        Lease lease = locker().acquire(lock, "renewed").keepAlive(false);
        store.failRead(new NoClassDefFoundError("a class of the backend's driver"));
        assertThrows(NoClassDefFoundError.class, lease::renew);
        assertEquals(1, count("before RENEW"), told.toString());
        assertEquals(1, count("after RENEW"), "the probe heard the renewal begin and never end: " + told);
    }
}
