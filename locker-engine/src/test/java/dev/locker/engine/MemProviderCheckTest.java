package dev.locker.engine;

import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.testkit.ProviderCheckSuite;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** {@code mem:} keeps the check contract: check() creates no store; open() runs with what check() returned. */
class MemProviderCheckTest extends ProviderCheckSuite {

    private final String name = "check-" + System.nanoTime();

    @Override
    protected String baseUri() {
        return "mem:" + name;
    }

    @Override
    protected void assertNoIo() {
        assertFalse(MemLockerProvider.hasStore(name), "check() created the store of mem:" + name);
    }

    @Test
    void openRunsWithTheConfigurationCheckReturned() {
        String uri = baseUri() + "?expiry=7s&lockWait=5ms&maxKeyBytes=1000";
        LockerConfig config = LockerConfig.builder().retries(4).rid("node-1").build();
        LockerConfig checked = Lockers.check(uri, config);
        try (Locker locker = Lockers.open(uri, config)) {
            assertEquals(checked.expiry(), locker.config().expiry());
            assertEquals(checked.lockWait(), locker.config().lockWait());
            assertEquals(checked.maxKeyBytes(), locker.config().maxKeyBytes());
            assertEquals(checked.retries(), locker.config().retries());
        }
    }
}
