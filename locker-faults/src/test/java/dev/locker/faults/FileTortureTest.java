package dev.locker.faults;

import java.nio.file.Path;

/** Every fault scenario that applies to file:, on a directory of lock files. */
class FileTortureTest extends TortureTest {

    @Override
    Backend backend(Path servers) {
        return new FileBackend(servers);
    }
}
