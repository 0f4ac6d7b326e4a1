package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TimeSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A process restored from a checkpoint (CRaC, CRIU) may run on another boot, in another time namespace, as another
 * process: what file: read of them once is then stale, and a locker refuses to grant or renew on it.
 */
class FileRestoreTest {

    private static final String OTHER_BOOT = "00000000-0000-0000-0000-000000000000";

    private final FileFixture fixture = new FileFixture("file-restore");

    @AfterEach
    void cleanUp() throws Exception {
        fixture.close();
    }

    private Locker open(String rid) {
        return FileLocker.builder(fixture.dir()).config(LockerConfig.builder().rid(rid).expiry(Duration.ofSeconds(60))
                .build()).build();
    }

    /** Gives {@code locker} the clock it would have kept from before a restore onto another boot. */
    private static void restoredOntoAnotherBoot(Locker locker) throws Exception {
        Field clock = FileLocker.class.getDeclaredField("clock");
        clock.setAccessible(true);
        clock.set(locker, new HostClock(TimeSource.system(), false, OTHER_BOOT));
    }

    @Test
    void aLockerWhoseBootIdIsStaleRefusesToGrant() throws Exception {
        Assumptions.assumeTrue(new HostClock(TimeSource.system(), true).domain().startsWith("boot:"), "Linux");
        try (Locker a = open("restored")) {
            restoredOntoAnotherBoot(a);
            PermanentLockingException refused = assertThrows(PermanentLockingException.class,
                    () -> a.acquire(KeyColumn.named("after-a-restore"), "its claim would name a boot that is over"));
            assertTrue(refused.getMessage().contains("restored"), refused.getMessage());
        }
    }

    @Test
    void aLockerWhoseBootIdIsStaleRefusesToRenew() throws Exception {
        Assumptions.assumeTrue(new HostClock(TimeSource.system(), true).domain().startsWith("boot:"), "Linux");
        try (Locker a = open("restored")) {
            Lease lease = a.acquire(KeyColumn.named("held-across-a-restore"), "held").keepAlive(false);
            restoredOntoAnotherBoot(a);
            assertThrows(RuntimeException.class, lease::renew);
            assertTrue(!lease.isValid(), "a lease that cannot be renewed on a stale clock is not valid");
            lease.close();
        }
    }

    @Test
    void aStaleCachedClockOrProcessIdentityIsDetected() {
        Assumptions.assumeTrue(new HostClock(TimeSource.system(), true).domain().startsWith("boot:"), "Linux");
        new HostClock(TimeSource.system(), false).requireCurrent(); // read just now: current
        IllegalStateException boot = assertThrows(IllegalStateException.class,
                () -> new HostClock(TimeSource.system(), false, OTHER_BOOT).requireCurrent());
        assertTrue(boot.getMessage().contains("restored"), boot.getMessage());
        Sessions.requireCurrent(Sessions.PROCESS);
        IllegalStateException process = assertThrows(IllegalStateException.class,
                () -> Sessions.requireCurrent("linux:" + OTHER_BOOT + ":pid:[4026531836]:1:1"));
        assertTrue(process.getMessage().contains("restored"), process.getMessage());
    }
}
