package dev.locker.api;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a URI without a usable scheme tells its user, on a classpath that holds no backend at all. */
class SchemeHintTest {

    private static String refusal(String uri) {
        return assertThrows(IllegalArgumentException.class, () -> Lockers.open(uri)).getMessage();
    }

    @Test
    void aHostAndPortWithoutASchemeNamesTheSchemesAndSuggestsRedis() {
        String m = refusal("localhost:6379");
        for (String scheme : new String[]{"redis://", "rediss://", "mongodb://", "hbase://", "file:", "mem:"}) {
            assertTrue(m.contains(scheme), scheme + " is named: " + m);
        }
        assertTrue(m.contains("redis://localhost:6379"), m);
    }

    @Test
    void aBareHostNamesTheSchemesAndSuggestsRedis() {
        String m = refusal("cache-1");
        assertTrue(m.contains("redis://cache-1") && m.contains("mongodb://"), m);
    }

    @Test
    void theSuggestionForAUriWithAPasswordMasksThePassword() {
        String m = refusal("default:s3cret-pw@localhost:6379");
        assertFalse(m.contains("s3cret-pw"), m);
        assertTrue(m.contains("redis://default:***@localhost:6379"), m);
        assertFalse(refusal(":s3cret-pw@localhost:6379").contains("s3cret-pw"));
    }

    @Test
    void aKnownSchemeWithoutItsBackendNamesTheModuleToAdd() {
        String redis = refusal("redis://localhost:6379");
        assertTrue(redis.contains("add dev.locker:locker-redis"), redis);
        assertTrue(refusal("rediss://localhost:6380").contains("add dev.locker:locker-redis"));
        assertTrue(refusal("mongodb://db1/").contains("add dev.locker:locker-mongo"));
        assertTrue(refusal("mongodb+srv://cluster0.example.net/").contains("add dev.locker:locker-mongo"));
        assertTrue(refusal("hbase://zk1:2181/locks").contains("add dev.locker:locker-hbase"));
        assertTrue(refusal("file:/tmp/locks").contains("add dev.locker:locker-file"));
        assertTrue(refusal("mem:demo").contains("add dev.locker:locker-engine"));
    }

    @Test
    void theModuleHintNeverShowsAPassword() {
        String m = refusal("redis://default:s3cret-pw@localhost:6379");
        assertFalse(m.contains("s3cret-pw"), m);
        assertTrue(m.contains("add dev.locker:locker-redis"), m);
    }

    @Test
    void anUnknownSchemeNamesTheSchemesLockerHas() {
        String m = refusal("zookeeper://zk1:2181");
        assertTrue(m.contains("'zookeeper'") && m.contains("redis://") && m.contains("hbase://"), m);
        assertFalse(m.contains("add dev.locker:"), "no module serves it: " + m);
    }
}
