package dev.locker.testkit;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;

import static dev.locker.testkit.Scenarios.listAll;
import static dev.locker.testkit.Scenarios.take;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Listing: exactly the held locks with their holders and tokens, page by page; bad arguments fail before I/O. */
public interface ListingSection extends ConformanceScenario {

    /**
     * Three processes: a holds two locks (keys of different lengths), b holds two columns of one key and released a
     * third lock, c "crashed" holding a lock that then expired, and a holds one lock outside the prefix whose key plus
     * column nevertheless starts with the prefix bytes. Listing the prefix shows exactly the four held locks with
     * their holders and fencing tokens; paging two at a time visits each of them once; the empty prefix lists them too.
     */
    @Test
    default void listShowsExactlyTheHeldLocksWithTheirHoldersAndTokens() throws Exception {
        Duration longExpiry = Duration.ofMinutes(10);
        Locker a = open(config("a").expiry(longExpiry).build());
        Locker b = open(config("b").expiry(longExpiry).build());
        Locker c = process("c");
        Locker viewer = process("viewer");
        String thread = Thread.currentThread().getName();
        String scenario = new String(lock("").key(), StandardCharsets.UTF_8);
        take(c, lock("crashed"), new LockTransaction("crashed holder"));
        pass(expiry().plusMillis(300)); // c never released: its claim is dead now

        Map<KeyColumn, Long> held = new HashMap<>();
        Map<KeyColumn, Locker> holders = new HashMap<>();
        Map<KeyColumn, String> whys = new HashMap<>();
        List<KeyColumn> ofA = List.of(lock("a"), lock("a-with-a-longer-key"));
        List<KeyColumn> ofB = List.of(KeyColumn.of(scenario + "b", "c1"), KeyColumn.of(scenario + "b", "c2"));
        for (KeyColumn l : ofA) {
            LockTransaction tx = new LockTransaction("job " + l.keyLength());
            take(a, l, tx);
            held.put(l, a.fencingToken(l, tx));
            holders.put(l, a);
            whys.put(l, tx.why());
        }
        for (KeyColumn l : ofB) {
            LockTransaction tx = new LockTransaction("job b");
            take(b, l, tx);
            held.put(l, b.fencingToken(l, tx));
            holders.put(l, b);
            whys.put(l, tx.why());
        }
        Object released = new Object();
        take(b, lock("released"), released);
        b.deleteLocks(released);
        KeyColumn outside = KeyColumn.of(scenario.substring(0, scenario.length() - 1),
                scenario.substring(scenario.length() - 1) + "outside");
        take(a, outside, new Object());

        LockPage page = viewer.list(scenario, 100, null);
        List<LockInfo> listed = new ArrayList<>(page.locks());
        page.nextCursor().ifPresent(next -> listed.addAll(listAll(viewer, lock("").key(), 100, next)));
        Map<KeyColumn, LockInfo> byLock = new HashMap<>();
        for (LockInfo info : listed) {
            assertNull(byLock.put(info.lock(), info), "listed twice: " + info);
        }
        assertEquals(held.keySet(), byLock.keySet(), "exactly the held locks under the prefix");
        for (KeyColumn l : held.keySet()) {
            LockInfo info = byLock.get(l);
            LockOwner o = info.holder();
            assertEquals(holders.get(l).rid(), o.rid(), "holder of " + l);
            assertEquals(holders.get(l) == a ? "host-a" : "host-b", o.host());
            assertEquals(4242, o.pid());
            assertEquals(thread, o.thread());
            assertEquals(whys.get(l), o.why());
            assertEquals(held.get(l), info.fencingToken(), "the holder's fencing token of " + l);
            assertEquals(viewer.holder(l).orElseThrow(), o, "list and holder agree on " + l);
            assertNotNull(o.since(), "since of " + l);
            Duration lifetime = Duration.between(o.since(), info.expiresAt());
            assertTrue(lifetime.compareTo(longExpiry.minusSeconds(5)) > 0 && lifetime.compareTo(longExpiry.plusSeconds(5)) < 0,
                    "expiresAt of " + info + " is about since + expiry");
        }

        List<LockInfo> paged = listAll(viewer, lock("").key(), 2, null);
        assertEquals(held.size(), paged.size(), "paging visits each held lock once: " + paged);
        assertEquals(held.keySet(), new HashSet<>(paged.stream().map(LockInfo::lock).toList()));

        List<KeyColumn> everywhere = new ArrayList<>();
        for (LockInfo info : listAll(viewer, new byte[0], Locker.MAX_LIST_LIMIT, null)) {
            if (info.lock().keyStartsWith(lock("").key())) {
                everywhere.add(info.lock());
            }
        }
        assertEquals(held.size(), everywhere.size(), "the empty prefix lists every lock once: " + everywhere);
        assertEquals(held.keySet(), new HashSet<>(everywhere));
    }

    @Test
    default void listRefusesBadArgumentsBeforeAnyIoAndFailsOnAClosedLocker() {
        Locker a = process("a");
        take(a, lock("x"), new Object());
        assertListArgumentsRefused(a);
        assertEquals(1, listAll(a, lock("").key(), 1, null).size(), "the locker works after refusing");
        a.close();
        assertThrows(IllegalStateException.class, () -> a.list(lock("").key(), 10, null));
        assertThrows(IllegalStateException.class, () -> a.list("", 10, null));
    }

    @Test
    default void listArgumentsAreRefusedEvenWhenTheBackendIsDown() {
        Assumptions.assumeTrue(fixture().canBreakBackend(), "backend cannot be broken");
        Locker a = process("a");
        fixture().breakBackend();
        try {
            assertListArgumentsRefused(a);
        } finally {
            fixture().repairBackend();
        }
    }

    private static void assertListArgumentsRefused(Locker a) {
        assertThrows(IllegalArgumentException.class, () -> a.list("", 0, null));
        assertThrows(IllegalArgumentException.class, () -> a.list("", Locker.MAX_LIST_LIMIT + 1, null));
        assertThrows(IllegalArgumentException.class, () -> a.list(new byte[0], -1, null));
        assertThrows(IllegalArgumentException.class, () -> a.list((String) null, 10, null));
        assertThrows(IllegalArgumentException.class, () -> a.list((byte[]) null, 10, null));
        assertThrows(IllegalArgumentException.class, () -> a.list("lone\uD800surrogate", 10, null));
        assertThrows(IllegalArgumentException.class, () -> a.list("", 10, "not a cursor of this backend"));
        assertThrows(IllegalArgumentException.class, () -> a.list("", 10, ""));
        assertThrows(IllegalArgumentException.class, () -> a.list(new byte[1 << 20], 10, null), "longer than maxKeyBytes");
    }
}
