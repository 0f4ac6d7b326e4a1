package dev.locker.examples;

import dev.locker.api.Locker;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the code fragments of the README and the docs may assume, as each says above its first fragment: a
 * {@code locker}, a {@code uri}, an slf4j {@code log}, the user's {@code store} and {@code migrate}, and a Micrometer
 * {@code registry}.
 * {@link ReadmeSnippetsTest} compiles every fragment as the body of a method of a subclass of this class.
 */
public abstract class ReadmeContext {

    /** A store of the user's that takes the fencing token with each write. */
    public interface Store {
        void write(String key, String column, String value, long fencingToken);
    }

    protected Locker locker;
    protected String uri = "mem:readme?expiry=30s";
    protected final Logger log = LoggerFactory.getLogger("readme");
    protected Store store = (key, column, value, token) -> log.info("{}/{} = {} (token {})", key, column, value, token);
    protected MeterRegistry registry = new SimpleMeterRegistry();

    protected void migrate(long fencingToken) {
        log.info("migrating with token {}", fencingToken);
    }

    /** The fragment. */
    public abstract void run() throws Exception;
}
