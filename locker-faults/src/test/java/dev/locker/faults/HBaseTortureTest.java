package dev.locker.faults;

import org.junit.jupiter.api.Order;
import java.nio.file.Path;

/** Every fault scenario that applies to HBase, on the real mini cluster in this JVM. */
@Order(1)
class HBaseTortureTest extends TortureTest {

    @Override
    Backend backend(Path servers) {
        return new HBaseBackend();
    }
}
