package dev.locker.springintegration;

/** The registry's Lock semantics on {@code mem:} (wait-and-read-back over the in-JVM store, a 5 ms lockWait). */
class MemLockRegistryTest extends LockRegistrySuite {

    @Override
    String startBackend() {
        return "mem:spring-integration-suite?lockWait=5ms";
    }

    @Override
    void stopBackend() {
    }
}
