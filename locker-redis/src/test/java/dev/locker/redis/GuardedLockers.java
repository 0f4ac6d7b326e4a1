package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.IntPredicate;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Lockers of one key prefix on servers a test kills and restarts, closed after each test; the test is skipped on an
 * external server. Register it with {@code @RegisterExtension}.
 */
final class GuardedLockers implements BeforeEachCallback, AfterEachCallback {

    /** The longest stretch a rerun scenario is given before its precondition counts as missed. */
    private static final int MAX_STRETCH = 4;

    private final String prefix;
    private final List<Locker> opened = new CopyOnWriteArrayList<>();

    GuardedLockers(String prefix) {
        this.prefix = prefix;
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs servers it can kill");
    }

    @Override
    public void afterEach(ExtensionContext context) {
        opened.forEach(Locker::close);
        opened.clear();
    }

    /** A builder on {@code server} and this prefix, for a process named {@code name} with {@code expiry}. */
    RedisLockerBuilder builder(RedisServer server, String name, Duration expiry) {
        return RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix(prefix)
                .config(LockerConfig.builder().rid(name + "-" + LockerConfig.randomRid().substring(0, 8))
                        .expiry(expiry).build());
    }

    /** A locker with {@code expiry} and {@code guard}, closed after the test. */
    RedisLocker open(RedisServer server, String name, Duration expiry, Duration guard) {
        return open(builder(server, name, expiry).restartGuard(guard));
    }

    /** The locker {@code b} builds, closed after the test. */
    RedisLocker open(RedisLockerBuilder b) {
        RedisLocker l = b.build();
        opened.add(l);
        return l;
    }

    /** Waits until {@code server} has provably been up for {@code d}, so that a guard of {@code d} lets grants in. */
    static void awaitUptime(RedisServer server, Duration d) {
        try (UnifiedJedis admin = RedisLocker.builder().node("127.0.0.1", server.port()).newClient(1)) {
            RedisTarget.awaitUptime(admin, d);
        }
    }

    /** A refusal that names the restart guard, as every refusal after a restart must. */
    static void namesTheGuard(LockingException refused) {
        assertTrue(refused.getMessage().contains("restartGuard"), refused.getMessage());
    }

    /**
     * Runs {@code scenario} with a stretch of 1, then 2, then 4, until it reports that {@code precondition} held.
     * A restart that outlasts a lease on a loaded machine leaves nothing to check. So the next run multiplies the
     * scenario's expiries and guards by its stretch. Each run asserts what it pins whenever its precondition held.
     */
    static void rerunUntil(String precondition, IntPredicate scenario) {
        for (int stretch = 1; stretch <= MAX_STRETCH; stretch *= 2) {
            if (scenario.test(stretch)) {
                return;
            }
        }
        fail(precondition + ", in no run up to a stretch of " + MAX_STRETCH);
    }

    /** The failure of {@code acquire}, or null when it granted a lease (which is closed at once). */
    static LockingException refusal(Supplier<Lease> acquire) {
        try (Lease granted = acquire.get()) {
            return null;
        } catch (LockingException e) {
            return e;
        }
    }

    /** As {@link #rerunUntil}, for a scenario that returns what {@link #askWhileValid} returned. */
    static void untilAskedWhileValid(IntPredicate scenario) {
        rerunUntil("the taker asked at least once while A's lease was valid", scenario);
    }

    /**
     * {@code taker} asks for {@code lock} every {@code pauseMs} until {@code held} ends: a grant while it is valid makes
     * two holders, and {@code who} says in the failure who was granted what. Each refusal goes to {@code refused}.
     */
    static void pollWhileValid(RedisLocker taker, KeyColumn lock, Lease held, long pauseMs,
                               Function<Lease, String> who, Consumer<LockingException> refused) {
        assertTrue(askWhileValid(taker, lock, held, pauseMs, who, refused),
                "the taker asked at least once while A's lease was valid");
    }

    /** As {@link #pollWhileValid}, but returns whether the taker asked at all while {@code held} was valid. */
    static boolean askWhileValid(RedisLocker taker, KeyColumn lock, Lease held, long pauseMs,
                                 Function<Lease, String> who, Consumer<LockingException> refused) {
        boolean asked = false;
        while (held.isValid()) {
            try (Lease second = taker.acquire(lock, "takeover")) {
                assertFalse(held.isValid(), who.apply(second) + " (token " + second.fencingToken() + ") while A's "
                        + "lease (token " + held.fencingToken() + ") was still valid: two holders");
            } catch (LockingException e) {
                refused.accept(e);
            }
            asked = true;
            RedisServer.sleep(pauseMs);
        }
        return asked;
    }
}
