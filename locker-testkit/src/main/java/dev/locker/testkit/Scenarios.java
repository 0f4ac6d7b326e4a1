package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockPage;
import dev.locker.api.Locker;
import dev.locker.api.TemporaryLockingException;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Steps the conformance sections share that need no scenario state. */
public final class Scenarios {

    private Scenarios() {
    }

    /** writeLock then checkLocks; on failure the transaction's locks are released and the failure rethrown. */
    public static void take(Locker locker, KeyColumn lock, Object tx) {
        try {
            locker.writeLock(lock, tx);
            locker.checkLocks(tx);
        } catch (RuntimeException e) {
            locker.deleteLocks(tx);
            throw e;
        }
    }

    /** Asserts that {@code locker} cannot take {@code lock} now, and returns the refusal. */
    public static TemporaryLockingException assertContended(Locker locker, KeyColumn lock, Object tx) {
        return assertThrows(TemporaryLockingException.class, () -> take(locker, lock, tx));
    }

    /** Every page of a listing from {@code cursor} on; each page holds at most {@code limit} locks. */
    public static List<LockInfo> listAll(Locker locker, byte[] keyPrefix, int limit, String cursor) {
        List<LockInfo> out = new ArrayList<>();
        String next = cursor;
        for (int pages = 0; pages < 100_000; pages++) {
            LockPage page = locker.list(keyPrefix, limit, next);
            assertTrue(page.locks().size() <= limit, "a page holds at most " + limit + " locks: " + page);
            out.addAll(page.locks());
            next = page.nextCursor().orElse(null);
            if (next == null) {
                return out;
            }
        }
        throw new AssertionError("the listing did not end within 100000 pages");
    }

    /** Waits (bounded, 10 s) until {@code list} has at least {@code n} elements; returns whether it has. */
    public static boolean awaitSize(List<?> list, int n) throws InterruptedException {
        for (int i = 0; i < 1000 && list.size() < n; i++) {
            Thread.sleep(10);
        }
        return list.size() >= n;
    }

    /** Names that break a backend which splices them into keys, queries, scripts or file names. */
    public static List<KeyColumn> hostileNames(String prefix) {
        List<KeyColumn> out = new ArrayList<>();
        out.add(KeyColumn.of(prefix + "plain", ""));
        out.add(KeyColumn.of(prefix + "$ne", "c"));
        out.add(KeyColumn.of(prefix + "a.b", "c"));
        out.add(KeyColumn.of(prefix + "{tag}", "c"));
        out.add(KeyColumn.of(prefix + "{\"$gt\": \"\"}", "c"));
        out.add(KeyColumn.of(prefix + "nul\u0000byte", "c"));
        out.add(KeyColumn.of(prefix + "nul", "\u0000byte"));
        out.add(KeyColumn.of(prefix + "quote'\"`;--", "*"));
        out.add(KeyColumn.of(prefix + "lua]]..redis.call('FLUSHALL')--", "c"));
        out.add(KeyColumn.of(prefix + "ünïcödé ✓ 𝄞", "c"));
        byte[] binary = new byte[256];
        for (int i = 0; i < binary.length; i++) {
            binary[i] = (byte) i;
        }
        out.add(KeyColumn.of((prefix + "bin").getBytes(StandardCharsets.UTF_8), binary));
        return out;
    }
}
