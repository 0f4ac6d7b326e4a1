package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.TimeSource;

import java.time.Duration;
import java.util.concurrent.ExecutorService;

/**
 * The vocabulary every conformance section writes its scenarios in, kept by {@link ConformanceBase} over one
 * {@link LockerFixture}. Each "process" is a locker instance with its own rid and mediator on the shared backend.
 */
public interface ConformanceScenario {

    /** Claim lifetime of lease scenarios on real time; a stall of about 0.6 s on a busy machine is tolerated. */
    Duration LEASE_EXPIRY = Duration.ofMillis(1200);

    /** The backend under test. */
    LockerFixture fixture();

    /** The scenario's time source: a {@link VirtualClock} when expiry follows it, else the system clock. */
    TimeSource clock();

    /** The scenario's virtual clock, or null when the server's clock decides expiry. */
    VirtualClock virtualClock();

    /** A prefix unique to this scenario; every lock name of the scenario starts with it. */
    String prefix();

    /** Claim lifetime in scenarios: long on a virtual clock, short on a real one. */
    Duration expiry();

    /** A configuration for a new process named {@code name} on the scenario's clock. */
    LockerConfig.Builder config(String name);

    /** A new "process" on the shared backend. */
    Locker process(String name);

    /** A new locker with {@code config}, closed after the scenario. */
    Locker open(LockerConfig config);

    /** Closes {@code locker} after the scenario, like the ones {@link #open} makes. */
    Locker adopt(Locker locker);

    /** A lock unique to this scenario. */
    KeyColumn lock(String name);

    /** Lets {@code d} pass: advances the virtual clock, or sleeps on a real one. */
    void pass(Duration d) throws InterruptedException;

    /** A process whose backend steps the test can pause. */
    Locker pausable(String name, StepPauses pauses);

    /** A process on the system clock with {@link #LEASE_EXPIRY}: keep-alive runs on real background time. */
    default Locker realTimeProcess(String name) {
        return realTimeProcess(name, LEASE_EXPIRY);
    }

    /** A process on the system clock with {@code expiry}: a real-time scenario run again stretched uses it. */
    default Locker realTimeProcess(String name, Duration expiry) {
        return open(config(name).timeSource(TimeSource.system()).expiry(expiry).build());
    }

    /** Threads for processes a scenario pauses while others act. */
    ExecutorService stepPool();

    /** An expected-value-checking store guarded by {@code locker}; the scenario is skipped if the backend has none. */
    KeyColumnValueStore expectedValueCheckingStore(Locker locker);
}
