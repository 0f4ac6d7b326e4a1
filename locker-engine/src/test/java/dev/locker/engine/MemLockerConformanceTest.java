package dev.locker.engine;

import dev.locker.spi.Entry;
import dev.locker.api.KeyColumn;
import dev.locker.spi.StoreTransaction;
import java.util.List;

import dev.locker.spi.KeyColumnValueStore;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockProbe;
import dev.locker.testkit.LateGrantSection;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LockerConformanceSuite;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.LockerFixture;

/**
 * The whole conformance suite, with leases of their own durations and the late-grant rule, on ConsistentKeyLocker over
 * one InMemoryStore (mem:'s wait-and-read-back protocol).
 */
class MemLockerConformanceTest extends LockerConformanceSuite implements LeaseDurationsSection, LateGrantSection {

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
            public boolean canLoseClaims() {
                return true;
            }

            @Override
            public void loseClaims(KeyColumn lock) {
                byte[] row = lock.encoded();
                byte[] end = new byte[64];
                java.util.Arrays.fill(end, (byte) 0xFF);
                StoreTransaction tx = real.beginTransaction();
                List<byte[]> columns = new java.util.ArrayList<>();
                for (Entry e : real.getSlice(row, new byte[0], end, tx)) {
                    columns.add(e.column());
                }
                real.mutate(row, List.of(), columns, tx);
            }

            @Override
            public boolean expiryFollowsConfiguredClock() {
                return true;
            }

            /** Wait-and-read-back grants at the read-back. */
            @Override
            public LockProbe.Step grantingStep() {
                return LockProbe.Step.CHECK;
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
