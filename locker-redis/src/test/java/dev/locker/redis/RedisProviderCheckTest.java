package dev.locker.redis;

import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.testkit.ProviderCheckSuite;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertThrows;

/** {@code redis://} keeps the check contract: check() makes no connection, even with options that are all good. */
class RedisProviderCheckTest extends ProviderCheckSuite {

    @Override
    protected String baseUri() {
        return "redis://127.0.0.1:" + port() + "/0";
    }

    @Override
    protected String baseUriWithPassword() {
        return "redis://default:Pw0Secret@127.0.0.1:" + port() + "/0";
    }

    @Test
    void redisOptionsAreCheckedToo() {
        LockerConfig c = LockerConfig.defaults();
        assertThrows(IllegalArgumentException.class, () -> Lockers.check(baseUri() + "?poolSize=0", c));
        assertThrows(IllegalArgumentException.class, () -> Lockers.check(baseUri() + "?tombstoneTtl=36600d", c));
        assertThrows(IllegalArgumentException.class,
                () -> Lockers.check("redis://127.0.0.1:" + port() + ",127.0.0.1:1/2", c), "database 2 in a Cluster");
        Lockers.check(baseUri() + "?poolSize=2&prefix=app:&evictionCheck=warn", c);
        assertNoIo();
    }
}
