package dev.locker.mongo;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import dev.locker.api.TimeSource;

import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/**
 * A real in-process MongoDB wire-protocol server (mongo-java-server, memory backend) on a random loopback port, which
 * can be stopped and started again on the same port (the memory backend loses its data, like a restarted in-memory
 * mongod). Its clock can follow a {@link TimeSource} — a test's virtual clock — or be set off the system clock, so that
 * the locker's offset measurement meets a server whose clock really differs.
 */
public final class InProcessMongo implements AutoCloseable {

    /** The server's wall clock: a time source plus a fixed offset, both changeable while it runs. */
    static final class FollowingClock extends Clock {
        private volatile TimeSource source = TimeSource.system();
        private volatile Duration offset = Duration.ZERO;

        void follow(TimeSource s) {
            this.source = s;
        }

        void offset(Duration d) {
            this.offset = d;
        }

        @Override
        public Instant instant() {
            return source.now().plus(offset);
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }
    }

    private final FollowingClock clock = new FollowingClock();
    private volatile MongoServer server;
    private int port;

    public static InProcessMongo start() {
        InProcessMongo m = new InProcessMongo();
        m.listen(0);
        return m;
    }

    private void listen(int onPort) {
        MongoServer s = new MongoServer(new MemoryBackend(clock));
        s.bind(new InetSocketAddress("127.0.0.1", onPort), 1, 2);
        port = s.getLocalAddress().getPort();
        server = s;
    }

    /**
     * The connection string, with a server selection timeout short enough that an outage is reported in seconds and
     * long enough (3 s, Locker's own default) that a loaded 2-core machine does not fail an open by it.
     */
    public String uri() {
        return "mongodb://127.0.0.1:" + port + "/?serverSelectionTimeoutMS=3000&connectTimeoutMS=3000";
    }

    String address() {
        return "127.0.0.1:" + port;
    }

    int port() {
        return port;
    }

    FollowingClock clock() {
        return clock;
    }

    /** Stops listening and drops every client connection (and the data). */
    synchronized void stop() {
        MongoServer s = server;
        server = null;
        if (s != null) {
            s.shutdownNow();
        }
    }

    /** Starts a fresh server on the same port. */
    synchronized void restart() {
        stop();
        RuntimeException last = null;
        for (int i = 0; i < 50; i++) {
            try {
                listen(port);
                return;
            } catch (RuntimeException e) { // the port may linger for a moment after the shutdown
                last = e;
                try {
                    Thread.sleep(100);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        throw new IllegalStateException("could not restart the in-process MongoDB on port " + port, last);
    }

    boolean isRunning() {
        return server != null;
    }

    @Override
    public void close() {
        stop();
    }
}
