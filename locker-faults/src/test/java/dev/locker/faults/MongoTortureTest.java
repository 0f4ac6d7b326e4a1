package dev.locker.faults;

import org.junit.jupiter.api.Order;
import java.nio.file.Path;

/** Every fault scenario that applies to MongoDB, on a mongo-java-server JVM the harness can kill, restart and pause. */
@Order(3)
class MongoTortureTest extends TortureTest {

    @Override
    Backend backend(Path servers) {
        return new MongoBackend(servers);
    }
}
