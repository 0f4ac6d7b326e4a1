package dev.locker.springintegration;

import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

/** The registry's Lock semantics on {@code file:}, the processes of one host sharing a directory. */
class FileLockRegistryTest extends LockRegistrySuite {

    @TempDir
    static Path dir;

    @Override
    String startBackend() {
        return "file:" + dir.resolve("locks");
    }

    @Override
    void stopBackend() {
    }
}
