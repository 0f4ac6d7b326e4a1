package dev.locker.faults;

import java.nio.file.Path;

/** Every fault scenario that applies to MongoDB, on a mongo-java-server JVM the harness can kill, restart and pause. */
class MongoTortureTest extends TortureTest {

    @Override
    Backend backend(Path servers) {
        return new MongoBackend(servers);
    }
}
