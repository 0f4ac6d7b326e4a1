package dev.locker.mongo;

import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.testkit.ProviderCheckSuite;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertThrows;

/** {@code mongodb://} keeps the check contract: check() creates no client, so it connects nowhere. */
class MongoProviderCheckTest extends ProviderCheckSuite {

    @Override
    protected String baseUri() {
        return "mongodb://127.0.0.1:" + port() + "/db";
    }

    @Override
    protected String baseUriWithPassword() {
        return "mongodb://user:Pw0Secret@127.0.0.1:" + port() + "/db";
    }

    @Test
    void mongoOptionsAreCheckedToo() {
        LockerConfig c = LockerConfig.defaults();
        assertThrows(IllegalArgumentException.class, () -> Lockers.check(baseUri() + "?lockerTtlGraceSeconds=soon", c));
        assertThrows(IllegalArgumentException.class, () -> Lockers.check(baseUri() + "?w=banana&wtimeoutMS=x", c));
        assertThrows(IllegalArgumentException.class, () -> Lockers.check(baseUri() + "?lockerDatabase=a.b", c));
        Lockers.check(baseUri() + "?lockerCollection=locks&replicaSet=rs0&w=majority", c);
        assertThrows(IllegalArgumentException.class, () -> Lockers.check(baseUri() + "?lockerNoSuchOption=1", c));
        assertNoIo();
    }
}
