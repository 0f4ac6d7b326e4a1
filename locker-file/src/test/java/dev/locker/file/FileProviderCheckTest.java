package dev.locker.file;

import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.testkit.ProviderCheckSuite;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code file:} keeps the check contract: check() creates no directory and reads none. */
class FileProviderCheckTest extends ProviderCheckSuite {

    @TempDir
    Path tmp;

    private Path dir() {
        return tmp.resolve("never-created");
    }

    @Override
    protected String baseUri() {
        return "file:" + dir();
    }

    @Override
    protected void assertNoIo() {
        assertFalse(Files.exists(dir()), "check() created " + dir());
    }

    @Test
    void fileOptionsAndHostsAreCheckedToo() {
        assertTrue(Lockers.check(baseUri() + "?wallClock=true", LockerConfig.defaults()) != null);
        assertThrows(IllegalArgumentException.class, () -> Lockers.check(baseUri() + "?wallClock=maybe",
                LockerConfig.defaults()));
        IllegalArgumentException remote = assertThrows(IllegalArgumentException.class,
                () -> Lockers.check("file://user:Pw0Secret@nas/locks", LockerConfig.defaults()));
        assertFalse(remote.getMessage().contains("Pw0"), remote.getMessage());
        assertNoIo();
    }
}
