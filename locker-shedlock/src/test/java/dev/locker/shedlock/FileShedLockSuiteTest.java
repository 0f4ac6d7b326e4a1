package dev.locker.shedlock;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

/** ShedLock's provider suite on {@code file:}, the processes of one host sharing a directory. */
class FileShedLockSuiteTest extends ShedLockSuiteOverLocker {

    @TempDir
    static Path dir;

    private static LockerLockProvider provider;

    @BeforeAll
    static void open() {
        provider = LockerLockProvider.open("file:" + dir.resolve("locks"));
    }

    @AfterAll
    static void close() {
        provider.close();
    }

    @Override
    LockerLockProvider provider() {
        return provider;
    }
}
