package dev.locker.examples;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.api.LockingException;

import java.io.PrintStream;
import java.time.Duration;

/**
 * Two "processes" (two locker instances with their own rids) contend for one lock on the backend named by the first
 * argument (default {@code mem:demo}); prints who won, why the other lost, and what fencing tokens were issued.
 */
public final class ContentionDemo {

    private ContentionDemo() {
    }

    public static void main(String[] args) throws Exception {
        String uri = args.length > 0 ? args[0] : "mem:demo";
        run(uri, System.out);
    }

    static void run(String uri, PrintStream out) throws Exception {
        KeyColumn lock = KeyColumn.of("schema", "migration-2026-11");
        LockerConfig base = LockerConfig.builder().expiry(Duration.ofSeconds(10)).lockWait(Duration.ofMillis(20)).build();
        out.println("Backend: " + Lockers.redact(uri) + " (known schemes: " + Lockers.providers().keySet() + ")");
        try (Locker web1 = Lockers.open(uri, base.toBuilder().rid("web-1-" + LockerConfig.randomRid().substring(0, 6)).host("web-1").build());
             Locker web2 = Lockers.open(uri, base.toBuilder().rid("web-2-" + LockerConfig.randomRid().substring(0, 6)).host("web-2").build())) {

            // Phase by phase, as a storage layer does it: writeLock, checkLocks, then mutate, then deleteLocks.
            LockTransaction tx1 = new LockTransaction("run schema migration 2026-11");
            web1.writeLock(lock, tx1);
            web1.checkLocks(tx1);
            long token1 = web1.fencingToken(lock, tx1);
            out.println("web-1 won " + lock + " with fencing token " + token1);

            LockTransaction tx2 = new LockTransaction("run schema migration 2026-11");
            try {
                web2.writeLock(lock, tx2);
                web2.checkLocks(tx2);
                out.println("UNEXPECTED: web-2 also holds the lock");
            } catch (LockingException lost) {
                out.println("web-2 lost: " + lost.getMessage());
                out.println("  holder seen by web-2: " + lost.holder());
            } finally {
                web2.deleteLocks(tx2);
            }

            out.println("operators see the holder: " + web2.holder(lock).orElseThrow());
            web1.deleteLocks(tx1);
            out.println("web-1 released; holder now: " + web2.holder(lock).map(Object::toString).orElse("nobody"));

            // The application-team way: one call, a Closeable lease, a token to pass along with every write.
            try (Lease lease = web2.acquire(lock, "run schema migration 2026-11")) {
                out.println("web-2 won it next with fencing token " + lease.fencingToken()
                        + (lease.fencingToken() > token1 ? " (greater than web-1's: a stale web-1 write can be refused)" : ""));
            }
        }
    }
}
