package dev.locker.engine;

import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.ConsistentKeyConformanceSuite;

/** JanusGraph's ConsistentKeyLocker scenarios over the in-memory store. */
class MemConsistentKeyTest extends ConsistentKeyConformanceSuite {

    @Override
    protected KeyColumnValueStore openStore() {
        return new InMemoryStore("ckl-scenarios");
    }

    @Override
    protected Locker consistentKeyLocker(KeyColumnValueStore store, LockerConfig config) {
        return ConsistentKeyLocker.builder(store).config(config).build();
    }
}
