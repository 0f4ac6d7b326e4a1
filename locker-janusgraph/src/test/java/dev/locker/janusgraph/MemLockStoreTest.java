package dev.locker.janusgraph;

/** JanusGraph's lock tests, unmodified, on {@code mem:}'s wait-and-read-back protocol (JanusGraph's own). */
class MemLockStoreTest extends LockerLockStoreTest {

    @Override
    String lockerUri() {
        return "mem:janusgraph-lock-store-test?protocol=wait-and-read-back&lockWait=10ms";
    }
}
