package dev.locker.file;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static dev.locker.file.Stripes.lockedElsewhere;
import static dev.locker.file.Stripes.sameStripe;
import static dev.locker.file.Stripes.stripeOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** A process stopped on a stripe holds up its stripe's grants at most: never another stripe, never a holder's renewal. */
class FileStripeTest {

    private final FileFixture fixture = new FileFixture("stripes");
    private final Path dir = fixture.dir();
    private final List<ChildJvm> children = new ArrayList<>();

    @AfterEach
    void cleanUp() throws Exception {
        for (ChildJvm c : children) {
            c.close();
        }
        fixture.close();
    }

    private Locker open(String rid, Duration expiry) {
        return FileLocker.builder(dir).config(LockerConfig.builder().rid(rid).expiry(expiry).build()).build();
    }

    private ChildJvm start(String mode, int expirySeconds, String... locks) throws IOException {
        return keep(ChildJvm.start(mode, dir, expirySeconds, locks));
    }

    private ChildJvm keep(ChildJvm c) {
        children.add(c);
        return c;
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
            ChildJvm churn = start("churn", 60, "churned");
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
     * holds up the grants of every other lock of its stripe while it stays stopped.
     */
    @Test
    @Disabled("accepted limit (README, LockDirectory): a process stopped inside a grant's token step holds up "
            + "grants on its stripe; a token mark per lock would lift it")
    void aProcessStoppedInsideAGrantsTokenStepHoldsUpGrantsOnItsStripe() throws Exception {
        KeyColumn churned = KeyColumn.named("header-churned");
        int stripe = stripeOf(churned);
        KeyColumn unrelated = sameStripe(stripe, "header-free-");
        Path stripeFile = dir.resolve(".stripes").resolve(String.format("%02x", stripe));
        ChildJvm churn = start("churn", 60, "header-churned");
        churn.expect("TOKEN ");
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
        try (Locker healthy = open("healthy", Duration.ofSeconds(30))) {
            Acquisition a = healthy.acquireWithin(unrelated, "a free lock nobody holds", Duration.ofSeconds(5));
            assertTrue(a.acquired(), "could not take " + unrelated + ", free, on stripe " + stripe + ", while another "
                    + "process was stopped inside a grant of " + churned + ": " + a.outcome() + " "
                    + a.failure().map(Throwable::getMessage).orElse(""));
            a.lease().orElseThrow().close();
        } finally {
            churn.signal("CONT");
        }
    }

    /**
     * The bound of that limit: a process stopped inside a grant's token step holds up its own stripe only.
     * A free lock of another stripe is granted meanwhile.
     */
    @Test
    void aProcessStoppedInsideAGrantsTokenStepLeavesOtherStripesFree() throws Exception {
        KeyColumn churned = KeyColumn.named("header-churned");
        int stripe = stripeOf(churned);
        KeyColumn elsewhere = otherStripe(stripe, "header-elsewhere-");
        Path stripeFile = Stripes.stripeFile(dir, stripe);
        ChildJvm churn = start("churn", 60, "header-churned");
        churn.expect("TOKEN ");
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
        try (Locker healthy = open("healthy", Duration.ofSeconds(30))) {
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
