package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LeaseOptions;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** An acquire that fails leaves no claim behind, whatever hold-at-least it asked for: there never was a lease. */
class FailedAcquireHoldAtLeastTest {

    private static final Duration EXPIRY = Duration.ofSeconds(30);

    private final VirtualClock clock = new VirtualClock();
    private final MemLockTable table = new MemLockTable("failed-acquire-" + LockerConfig.randomRid().substring(0, 8));
    private final List<Locker> lockers = new ArrayList<>();
    /** Claimed first: the canonical order is the encoded bytes'. */
    private final KeyColumn first = KeyColumn.named("a-first");
    private final KeyColumn second = KeyColumn.named("b-second");

    @AfterEach
    void closeLockers() {
        lockers.forEach(Locker::close);
    }

    private Locker open(String rid) {
        Locker l = MemLocker.builder(table)
                .config(LockerConfig.builder().rid(rid).expiry(EXPIRY).timeSource(clock).build()).build();
        lockers.add(l);
        return l;
    }

    /**
     * A asks for both locks with a 20 s hold-at-least while B holds the second: A's attempt claims the first, is
     * refused the second, and withdraws. Once B lets the second go, both locks are free: A's next attempt gets them,
     * and the first was never kept from C in between.
     */
    @Test
    void anAcquireAllRefusedOneLockLeavesNoClaimOnTheOthersForItsHoldAtLeast() {
        Locker a = open("a");
        Locker b = open("b");
        Locker c = open("c");
        LeaseOptions terms = LeaseOptions.expiry(EXPIRY).keepAlive(false).holdAtLeast(Duration.ofSeconds(20));
        Lease held = b.acquire(second, "holds the second lock");
        Optional<Lease> refused = a.tryAcquireAll(List.of(first, second), "needs both", Duration.ZERO, terms);
        assertTrue(refused.isEmpty(), "B holds the second lock");
        held.close();

        Optional<Lease> other = c.tryAcquire(first, "the first lock alone", Duration.ZERO);
        String holder = String.valueOf(c.holding(first));
        other.ifPresent(Lease::close);
        assertTrue(other.isPresent(), "the first lock is free after A's failed attempt, but is held: " + holder);

        Optional<Lease> both = a.tryAcquireAll(List.of(first, second), "needs both", Duration.ZERO, terms);
        both.ifPresent(Lease::close);
        assertTrue(both.isPresent(), "A's next attempt gets both locks");
    }

    /** The same failed attempt without a hold-at-least leaves the first lock free. */
    @Test
    void anAcquireAllRefusedOneLockLeavesNoClaimOnTheOthers() {
        Locker a = open("a");
        Locker b = open("b");
        Locker c = open("c");
        Lease held = b.acquire(second, "holds the second lock");
        Optional<Lease> refused = a.tryAcquireAll(List.of(first, second), "needs both", Duration.ZERO,
                LeaseOptions.expiry(EXPIRY).keepAlive(false));
        assertTrue(refused.isEmpty(), "B holds the second lock");
        held.close();
        Optional<Lease> other = c.tryAcquire(first, "the first lock alone", Duration.ZERO);
        assertTrue(other.isPresent(), "the first lock is free after A's failed attempt: " + c.holding(first));
        other.get().close();
    }
}
