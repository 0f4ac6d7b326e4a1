package dev.locker.engine;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.spi.Entry;
import dev.locker.spi.StoreTransaction;
import dev.locker.testkit.FaultyStore;
import dev.locker.testkit.LockerFixture;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** The fixtures of mem:'s two lockers for the conformance suite, each half of which runs in a class of its own. */
final class MemFixtures {

    private MemFixtures() {
    }

    /** ConsistentKeyLocker over one InMemoryStore (mem:'s wait-and-read-back protocol), which can fail on demand. */
    static LockerFixture waitAndReadBack(String name) {
        InMemoryStore real = new InMemoryStore(name);
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
                Arrays.fill(end, (byte) 0xFF);
                StoreTransaction tx = real.beginTransaction();
                List<byte[]> columns = new ArrayList<>();
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

    /** mem:'s atomic MemLocker over one lock table. */
    static LockerFixture atomic(String name) {
        MemLockTable table = new MemLockTable(name);
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
}
