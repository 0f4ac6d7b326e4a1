package dev.locker.file;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.TemporaryLockingException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static dev.locker.file.Stripes.lockedElsewhere;
import static dev.locker.file.Stripes.sameStripe;
import static dev.locker.file.Stripes.stripeOf;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** A process stopped on a stripe holds up at most its stripe's grants, and only until it runs again or dies. */
class FileStripeTest {

    private final FileFixture fixture = new FileFixture("stripes");
    private final Path dir = fixture.dir();

    @AfterEach
    void cleanUp() throws Exception {
        fixture.close();
    }

    /**
     * A process stopped inside a lock operation (SIGSTOP, a debugger, a frozen cgroup) holds its stripe. A healthy
     * holder of an unrelated lock on that stripe still renews and keeps its lease.
     */
    @Test
    void aProcessStoppedInsideALockOperationLeavesHealthyHoldersOfItsStripeTheirLeases() throws Exception {
        KeyColumn churned = KeyColumn.named("churned");
        int stripe = stripeOf(churned);
        KeyColumn mine = null;
        for (int i = 0; mine == null; i++) {
            KeyColumn candidate = KeyColumn.named("healthy-" + i);
            mine = stripeOf(candidate) == stripe ? candidate : null;
        }
        try (Locker healthy = FileLocker.builder(dir).config(LockerConfig.builder().rid("healthy")
                .expiry(Duration.ofSeconds(3)).build()).build();
             Lease lease = healthy.acquire(mine, "healthy, kept alive")) {
            ChildJvm churn = fixture.start("churn", 60, "churned");
            churn.expect("CHURNING");
            Path stripeFile = dir.resolve(".stripes").resolve(String.format("%02x", stripe));
            boolean caught = false;
            try {
                for (int i = 0; i < 500 && !caught; i++) {
                    churn.signal("STOP");
                    caught = lockedElsewhere(stripeFile, 0, 0);
                    if (!caught) {
                        churn.signal("CONT");
                        Thread.sleep(3);
                    }
                }
                assumeTrue(caught, "stopped the child inside a lock operation");
                Thread.sleep(6_000); // twice the healthy lease's expiry, the child stopped on the stripe all along
                assertTrue(lease.isValid(), "the healthy holder of " + mine + " lost its lease to an unrelated process "
                        + "stopped on stripe " + stripe);
            } finally {
                churn.signal("CONT");
            }
        }
    }

    /**
     * Every grant holds its stripe's header (the token mark) across a write and an fdatasync. A process stopped there
     * holds up the grants of the other locks of its stripe, which fail as temporary, until it runs again or dies.
     * Renewals and releases on that stripe go on meanwhile: they never take the header.
     */
    @Test
    void aProcessStoppedInsideATokenStepHoldsUpItsStripesGrantsUntilItRunsAgainOrDies() throws Exception {
        KeyColumn churned = KeyColumn.named("header-churned");
        int stripe = stripeOf(churned);
        KeyColumn free = sameStripe(stripe, "header-free-");
        KeyColumn held = sameStripe(stripe, "header-held-");
        ChildJvm churn = fixture.start("churn", 60, "header-churned");
        churn.expect("TOKEN ");
        try (Locker healthy = fixture.open("healthy", Duration.ofSeconds(30))) {
            Lease lease = healthy.acquire(held, "held across the stop"); // kept alive while the child is caught

            stopInsideTokenStep(churn, stripe);
            assertHeldUp(healthy, free, stripe);
            lease.renew(); // renewals take the lock's own range only, never the header
            assertTrue(lease.isValid(), "the renewal of " + held + " on stripe " + stripe + " did not keep its lease");
            lease.close();
            assertTrue(healthy.holder(held).isEmpty(), "the release of " + held + " on stripe " + stripe
                    + " left its claim while another process was stopped in a token step");
            churn.signal("CONT");
            assertGranted(healthy, free, "after the stopped process ran again");

            stopInsideTokenStep(churn, stripe);
            assertHeldUp(healthy, free, stripe);
            churn.kill(); // the kernel drops a dead process's file locks, the header's with them
            assertGranted(healthy, free, "after the stopped process died");
        } finally {
            churn.signal("CONT");
        }
    }

    /** Stops {@code churn} while it holds the header of {@code stripe}: a few thousand tries at most. */
    private void stopInsideTokenStep(ChildJvm churn, int stripe) throws Exception {
        Path stripeFile = Stripes.stripeFile(dir, stripe);
        boolean caught = false;
        for (int i = 0; i < 2000 && !caught; i++) {
            churn.signal("STOP");
            caught = lockedElsewhere(stripeFile, 0, LockDirectory.HEADER);
            if (!caught) {
                churn.signal("CONT");
                Thread.sleep(1);
            }
        }
        assumeTrue(caught, "stopped the child while it held the stripe header");
    }

    /** A grant of {@code free}, which nobody holds, fails as temporary: its stripe's header stays locked. */
    private static void assertHeldUp(Locker healthy, KeyColumn free, int stripe) {
        Acquisition a = healthy.acquireWithin(free, "a free lock of the held-up stripe", Duration.ZERO);
        a.lease().ifPresent(Lease::close);
        assertFalse(a.acquired(), "granted " + free + " on stripe " + stripe + " while another process was stopped "
                + "inside a token step on it: the header cannot have been taken");
        assertTrue(a.failure().orElseThrow() instanceof TemporaryLockingException, "not a temporary failure: " + a);
    }

    /** {@code free} is granted within a generous bound: the stripe's grants resumed. */
    private static void assertGranted(Locker healthy, KeyColumn free, String when) {
        Acquisition a = healthy.acquireWithin(free, "a free lock", Duration.ofSeconds(30));
        assertTrue(a.acquired(), "could not take " + free + ", free, " + when + ": " + a.outcome() + " "
                + a.failure().map(Throwable::getMessage).orElse(""));
        a.lease().orElseThrow().close();
    }

    /** A process stopped inside a grant's token step holds up its own stripe only: other stripes still grant. */
    @Test
    void aProcessStoppedInsideAGrantsTokenStepLeavesOtherStripesFree() throws Exception {
        KeyColumn churned = KeyColumn.named("header-churned");
        int stripe = stripeOf(churned);
        KeyColumn elsewhere = otherStripe(stripe, "header-elsewhere-");
        ChildJvm churn = fixture.start("churn", 60, "header-churned");
        churn.expect("TOKEN ");
        stopInsideTokenStep(churn, stripe);
        try (Locker healthy = fixture.open("healthy", Duration.ofSeconds(30))) {
            Acquisition a = healthy.acquireWithin(elsewhere, "a free lock of another stripe", Duration.ofSeconds(5));
            assertTrue(a.acquired(), "could not take " + elsewhere + " on stripe " + stripeOf(elsewhere)
                    + " while another process was stopped on stripe " + stripe + ": " + a.outcome() + " "
                    + a.failure().map(Throwable::getMessage).orElse(""));
            a.lease().orElseThrow().close();
        } finally {
            churn.signal("CONT");
        }
    }

    private static KeyColumn otherStripe(int stripe, String prefix) {
        for (int i = 0; ; i++) {
            KeyColumn candidate = KeyColumn.named(prefix + i);
            if (stripeOf(candidate) != stripe) {
                return candidate;
            }
        }
    }

}
