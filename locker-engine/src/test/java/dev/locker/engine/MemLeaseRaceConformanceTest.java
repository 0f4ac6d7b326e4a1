package dev.locker.engine;

import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.ConformanceBase;
import dev.locker.testkit.LeaseRaceSection;
import dev.locker.testkit.LockerFixture;

/** The lease race section on ConsistentKeyLocker over one InMemoryStore. */
class MemLeaseRaceConformanceTest extends ConformanceBase implements LeaseRaceSection {

    @Override
    protected LockerFixture createFixture() {
        InMemoryStore store = new InMemoryStore("lease-race");
        return new LockerFixture() {
            @Override
            public Locker open(LockerConfig config) {
                return ConsistentKeyLocker.builder(store).config(config).build();
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
}
