package dev.locker.redis;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.DeploymentCheck;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The guard recorded for a prefix keeps a locker with another guard out for as long as any claim it covers lives. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RedisRestartGuardRecordTest {

    @RegisterExtension
    final GuardedLockers lockers = new GuardedLockers("record:");

    private RedisLocker open(RedisServer s, String name, Duration expiry, Duration guard) {
        return lockers.open(s, name, expiry, guard);
    }

    /**
     * Given A holding a lock under a 4 s guard and renewing it past the guard record's life, B with a 1 s guard
     * records its own guard; the server then restarts without data. B must not be granted A's lock while A's lease
     * is valid: a holder that renews keeps counting on the guard it was granted under.
     */
    @Test
    void aRenewedClaimKeepsItsGuardRecordedUntilItEnds() {
        GuardedLockers.untilAskedWhileValid(stretch -> {
            try (RedisServer server = RedisServer.start()) {
                Duration guardA = Duration.ofSeconds(4L * stretch);
                Duration guardB = Duration.ofSeconds(stretch);
                GuardedLockers.awaitUptime(server, guardA);
                RedisLocker a = open(server, "a", guardA, guardA);
                KeyColumn lock = KeyColumn.named("nightly-" + LockerConfig.randomRid().substring(0, 8));
                // renewed by hand at the test's steps: a holder without keep-alive counts on its deadline alone
                Lease held = a.acquire(lock, "nightly").keepAlive(false);
                // A renews within its expiry while the record it wrote (guard + 1 s) runs out; nothing else admits
                for (int i = 0; i < 4; i++) {
                    RedisServer.sleep(1_500L * stretch);
                    held.renew();
                }
                RedisLocker b = open(server, "b", guardB, guardB);
                try {
                    b.acquire(KeyColumn.named("other"), "records a second guard").close();
                } catch (LockingException refused) {
                    assertTrue(refused.getMessage().contains("restartGuard"), refused.getMessage());
                }
                held.renew();
                server.kill9();
                server.startAgain(); // no data: A's claim is gone, A's lease does not know yet
                return GuardedLockers.askWhileValid(b, lock, held, 100,
                        second -> "B (1 s guard) was granted the lock under A's 4 s guard",
                        GuardedLockers::namesTheGuard);
            }
        });
    }

    /**
     * Given A holding a lock under a 4 s guard on a server with AOF appendfsync always, C on the same prefix with no
     * guard (it declares that the server keeps its data) is granted other locks. The restart keeps A's claim, so C
     * is not granted A's lock while A's lease is valid: a guard of 0 is sound wherever its declaration holds.
     */
    @Test
    void aLockerWithoutARestartGuardIsSoundBesideAGuardedOneOnAServerThatKeepsItsData() {
        try (RedisServer server = RedisServer.startPersistent()) {
            GuardedLockers.awaitUptime(server, Duration.ofSeconds(4));
            RedisLocker a = open(server, "a", Duration.ofSeconds(4), Duration.ofSeconds(4));
            KeyColumn lock = KeyColumn.named("nightly-" + LockerConfig.randomRid().substring(0, 8));
            Lease held = a.acquire(lock, "nightly").keepAlive(false);
            RedisLocker c = open(server, "c", Duration.ofSeconds(1), Duration.ZERO);
            c.acquire(KeyColumn.named("other"), "no guard").close();
            held.renew();
            server.kill9();
            server.startAgain(); // with its data: A's claim survives
            boolean refused = false;
            while (held.isValid()) {
                try (Lease second = c.acquire(lock, "takeover")) {
                    assertFalse(held.isValid(), "C (no guard) was granted the lock (token " + second.fencingToken()
                            + ") while A's lease (token " + held.fencingToken() + ") was still valid, on a server "
                            + "that keeps its data: two holders");
                } catch (TemporaryLockingException e) {
                    refused |= e.holder() != null;
                }
                RedisServer.sleep(100);
            }
            assertTrue(refused, "C was refused at least once naming A, whose claim survived the restart");
        }
    }

    /**
     * Given A holding a lock under a 2 s guard, recorded for the prefix, the doctor warns of a URI of that prefix with
     * restartGuard=0 (sound only where the server keeps its data), and fails it on this server, which keeps none.
     */
    @Test
    void theDoctorWarnsOfAnUnguardedUriWhileThePrefixRecordsAGuard() {
        try (RedisServer server = RedisServer.start()) {
            GuardedLockers.awaitUptime(server, Duration.ofSeconds(2));
            RedisLocker a = open(server, "a", Duration.ofSeconds(2), Duration.ofSeconds(2));
            try (Lease held = a.acquire(KeyColumn.named("nightly"), "nightly")) {
                List<DeploymentCheck.Finding> doctor = new RedisDoctor().check(server.address()
                        + "?prefix=record:&expiry=1s&restartGuard=0", p -> { });
                DeploymentCheck.Finding guard = doctor.stream().filter(f -> f.check().equals("restart-guard"))
                        .findFirst().orElseThrow();
                assertEquals(DeploymentCheck.Level.WARN, guard.level(), guard::toString);
                assertTrue(guard.toString().contains("restartGuard=2s"), guard::toString);
                DeploymentCheck.Finding persistence = doctor.stream().filter(f -> f.check().equals("persistence"))
                        .findFirst().orElseThrow();
                assertEquals(DeploymentCheck.Level.FAIL, persistence.level(), persistence::toString);
            }
        }
    }

    /**
     * Given A holding a lock under a 4 s guard, B with a 1 s guard is refused for its guard. The server then
     * restarts without data, which loses the record too. B, asking again as a scheduler would, must still be refused
     * while A's lease is valid: the restart the record exists for must not reset it.
     */
    @Test
    void aLockerRefusedForItsGuardBeforeARestartIsNotGrantedAfterIt() {
        GuardedLockers.untilAskedWhileValid(stretch -> {
            try (RedisServer server = RedisServer.start()) {
                Duration guardA = Duration.ofSeconds(4L * stretch);
                Duration guardB = Duration.ofSeconds(stretch);
                GuardedLockers.awaitUptime(server, guardA);
                RedisLocker a = open(server, "a", guardA, guardA);
                KeyColumn lock = KeyColumn.named("nightly-" + LockerConfig.randomRid().substring(0, 8));
                // renewed by hand at the test's steps: a holder without keep-alive counts on its deadline alone
                Lease held = a.acquire(lock, "nightly").keepAlive(false);
                RedisLocker b = open(server, "b", guardB, guardB);
                PermanentLockingException before = assertThrows(PermanentLockingException.class,
                        () -> b.acquire(KeyColumn.named("other"), "a second guard"));
                assertTrue(before.getMessage().contains("restartGuard"), before.getMessage());
                held.renew();
                server.kill9();
                server.startAgain(); // no data: A's claim and the record are gone, A's lease does not know yet
                return GuardedLockers.askWhileValid(b, lock, held, 100, second -> "B (1 s guard, refused for it "
                        + "before the restart) was granted the lock under A's 4 s guard",
                        GuardedLockers::namesTheGuard);
            }
        });
    }

    /**
     * Given A renewing a claim under a 2 s guard for longer than the record's own life (3 s), B with a 1 s guard is
     * refused while the claim lives, without any restart; once A releases and the record lapses, B records its own.
     */
    @Test
    void aLockerWithAnotherGuardIsRefusedForAsLongAsARenewedClaimLives() {
        GuardedLockers.rerunUntil("A renewed its claim within its validity until B asked", stretch -> {
            Duration guardA = Duration.ofSeconds(2L * stretch);
            Duration guardB = Duration.ofSeconds(stretch);
            try (RedisServer server = RedisServer.start()) {
                GuardedLockers.awaitUptime(server, guardA);
                RedisLocker a = open(server, "a", guardA, guardA);
                RedisLocker b = open(server, "b", guardB, guardB);
                // renewed by hand: the record's life is counted from the renewals alone, nothing else admits meanwhile
                Lease held = a.acquire(KeyColumn.named("nightly"), "nightly").keepAlive(false);
                for (int i = 0; i < 5; i++) {
                    RedisServer.sleep(1_000L * stretch);
                    if (!renewed(held)) {
                        return false; // a pause longer than the validity ended the claim: nothing keeps the record
                    }
                }
                LockingException refused = GuardedLockers.refusal(() -> b.acquire(KeyColumn.named("other"),
                        "a second guard"));
                if (!held.isValid()) {
                    return false; // the claim may have ended before B asked, and the record with it
                }
                assertInstanceOf(PermanentLockingException.class, refused, "B was granted under another guard");
                assertTrue(refused.getMessage().contains("restartGuard=" + guardB)
                        && refused.getMessage().contains(guardA.toString()), refused.getMessage());
                held.close();
                // the record lapses a guard and a second after A's last renewal
                RedisServer.sleep(guardA.plusMillis(1_100).toMillis());
                b.acquire(KeyColumn.named("other"), "the only guard now").close();
                return true;
            }
        });
    }

    /** Renews {@code held}; false when its validity had already ended by this process's clock. */
    private static boolean renewed(Lease held) {
        try {
            held.renew();
            return true;
        } catch (ExpiredLockException e) {
            if (e.getMessage().contains("validity ended")) {
                return false;
            }
            throw e;
        }
    }
}
