package dev.locker.janusgraph;

/** JanusGraph's lock tests with the locks on {@code mem:} (the wait-and-read-back protocol in this JVM). */
class MemLockStoreTest extends LockerLockStoreTest {

    @Override
    String lockerUri() {
        return "mem:janusgraph-lock-store-test?lockWait=10ms";
    }
}
