package dev.locker.faults;

import org.junit.jupiter.api.Order;
import java.nio.file.Path;

/** Every fault scenario that applies to Redis, each run on redis-server processes of its own. */
@Order(2)
class RedisTortureTest extends TortureTest {

    @Override
    Backend backend(Path servers) {
        return new RedisBackend(servers);
    }
}
