package dev.locker.faults;

import org.junit.jupiter.api.Order;
import java.nio.file.Path;

/** Every fault scenario that applies to file:, on a directory of lock files. */
@Order(4)
class FileTortureTest extends TortureTest {

    @Override
    Backend backend(Path servers) {
        return new FileBackend(servers);
    }
}
