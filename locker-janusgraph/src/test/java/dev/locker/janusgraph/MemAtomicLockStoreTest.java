package dev.locker.janusgraph;

/** JanusGraph's lock tests with the locks on {@code mem:}'s default, atomic protocol, as on the native backends. */
class MemAtomicLockStoreTest extends AtomicLockerLockStoreTest {

    @Override
    String lockerUri() {
        return "mem:janusgraph-atomic-lock-store-test";
    }
}
