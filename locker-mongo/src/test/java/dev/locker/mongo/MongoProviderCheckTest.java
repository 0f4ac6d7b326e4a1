package dev.locker.mongo;

import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.testkit.ProviderCheckSuite;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
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

    /**
     * A {@code mongodb+srv://} URI is checked without a DNS lookup: the driver looks its TXT record up (options) when it
     * parses such a URI, so check() reads it with a DNS client that answers nothing; the lookups happen when a locker
     * connects. The driver's DNS client in these tests counts its lookups ({@link CountingDnsClientProvider}).
     */
    @Test
    void anSrvUriIsCheckedWithoutALookup() {
        int before = CountingDnsClientProvider.LOOKUPS.get();
        LockerConfig c = Lockers.check("mongodb+srv://locker-check.invalid/db?expiry=30s&lockerCollection=locks",
                LockerConfig.defaults());
        assertEquals(java.time.Duration.ofSeconds(30), c.expiry());
        assertThrows(IllegalArgumentException.class, () -> Lockers.check("mongodb+srv://locker-check.invalid/db?foo=1",
                LockerConfig.defaults()));
        assertEquals(before, CountingDnsClientProvider.LOOKUPS.get(), "no DNS lookup");
    }
}
