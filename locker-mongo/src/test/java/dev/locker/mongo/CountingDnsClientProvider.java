package dev.locker.mongo;

import com.mongodb.spi.dns.DnsClient;
import com.mongodb.spi.dns.DnsClientProvider;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The DNS client the MongoDB driver finds (ServiceLoader) in this module's tests: it counts the lookups the driver asks
 * for and answers none (no test here needs DNS), so a test can tell that a step looked nothing up.
 */
public final class CountingDnsClientProvider implements DnsClientProvider {

    static final AtomicInteger LOOKUPS = new AtomicInteger();

    @Override
    public DnsClient create() {
        return (name, type) -> {
            LOOKUPS.incrementAndGet();
            return List.of();
        };
    }
}
