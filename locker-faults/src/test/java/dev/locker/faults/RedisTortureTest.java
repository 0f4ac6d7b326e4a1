package dev.locker.faults;

import java.nio.file.Path;

/** Every fault scenario that applies to Redis, each run on redis-server processes of its own. */
class RedisTortureTest extends TortureTest {

    @Override
    Backend backend(Path servers) {
        return new RedisBackend(servers);
    }
}
