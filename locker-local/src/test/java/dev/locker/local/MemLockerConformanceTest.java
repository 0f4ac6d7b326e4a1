package dev.locker.local;

import dev.locker.api.KeyColumnValueStore;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.LockerConformanceSuite;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.LockerFixture;

/** The whole conformance suite on the in-memory backend: ConsistentKeyLocker over one shared InMemoryStore. */
class MemLockerConformanceTest extends LockerConformanceSuite {

    private final InMemoryStore data = new InMemoryStore("evc-data");

    @Override
    protected LockerFixture createFixture() {
        InMemoryStore real = new InMemoryStore("conformance");
        FaultyStore store = new FaultyStore(real); // only to inject an outage; every operation reaches the real store
        return new LockerFixture() {
            @Override
            public Locker open(LockerConfig config) {
                return ConsistentKeyLocker.builder(store).config(config).build();
            }

            @Override
            public boolean canBreakBackend() {
                return true;
            }

            @Override
            public void breakBackend() {
                store.unavailable(true);
            }

            @Override
            public void repairBackend() {
                store.unavailable(false);
            }

            @Override
            public boolean expiryFollowsConfiguredClock() {
                return true;
            }

            @Override
            public void close() {
                store.close();
            }
        };
    }

    @Override
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return new ExpectedValueCheckingStore(data, locker);
    }
}
