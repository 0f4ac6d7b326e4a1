package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.spi.KeyColumnValueStore;
import dev.locker.testkit.LateGrantSection;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LockerConformanceSuite;
import dev.locker.testkit.LockerFixture;

/** The whole conformance suite, leases of their own durations and the late-grant rule, on mem:'s atomic MemLocker. */
class MemLockerAtomicConformanceTest extends LockerConformanceSuite implements LeaseDurationsSection,
        LateGrantSection {

    private final InMemoryStore data = new InMemoryStore("atomic-evc-data");

    @Override
    protected LockerFixture createFixture() {
        MemLockTable table = new MemLockTable("atomic-conformance");
        return new LockerFixture() {
            @Override
            public Locker open(LockerConfig config) {
                return MemLocker.builder(table).config(config).build();
            }

            /** A claim expires on its writer's clock: the scenario's virtual clock. */
            @Override
            public boolean expiryFollowsConfiguredClock() {
                return true;
            }

            @Override
            public boolean canLoseClaims() {
                return true;
            }

            @Override
            public void loseClaims(KeyColumn lock) {
                table.forget(lock);
            }

            @Override
            public void close() {
                // the table is garbage once the class's lockers are closed
            }
        };
    }

    @Override
    protected KeyColumnValueStore expectedValueChecking(Locker locker) {
        return new ExpectedValueCheckingStore(data, locker);
    }
}
