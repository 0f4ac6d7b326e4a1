package dev.locker.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * Debian's {@code redis-server} (or {@code $REDIS_SERVER}), a fresh one per run on a free loopback port, started by
 * the harness so that it can be killed, restarted on the same port and paused by pid. Without persistence by default;
 * with {@code appendonly yes --appendfsync always} for {@link Scenario#SERVER_RESTART_AOF}. The locker URI keeps the
 * default restart guard (one expiry), except with AOF (where claims survive) and in the control scenario, which
 * switches it off on purpose.
 */
public final class RedisBackend implements Backend {

    private static final String REDIS_SERVER = System.getenv().getOrDefault("REDIS_SERVER", "/usr/bin/redis-server");

    private final Path dir;
    private Scenario scenario;
    private Duration expiry;
    private int port;
    private Path dataDir;
    private ServerProcess server;

    /**
     * A backend whose servers keep their files under {@code dir}.
     *
     * @param dir a directory for the servers' data and logs
     */
    public RedisBackend(Path dir) {
        this.dir = dir;
    }

    @Override
    public String name() {
        return "redis";
    }

    @Override
    public String inapplicable(Scenario s) {
        return switch (s) {
            case REGION_SERVER_ABORT -> "HBase only";
            default -> null;
        };
    }

    @Override
    public void begin(Scenario s, Duration expiry) {
        this.scenario = s;
        this.expiry = expiry;
        this.port = ServerProcess.freePort();
        try {
            dataDir = Files.createDirectories(dir.resolve("redis-" + s.name().toLowerCase() + "-" + port));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        startServer();
    }

    private boolean persistent() {
        return scenario == Scenario.SERVER_RESTART_AOF;
    }

    @Override
    public String uri(String hostPort) {
        String guard = persistent() || scenario == Scenario.CONTROL_NO_GUARD ? "&restartGuard=0" : "";
        return "redis://" + hostPort + "?expiry=" + expiry.toMillis() + "ms&timeout=2s" + guard;
    }

    @Override
    public String serverAddress() {
        return "127.0.0.1:" + port;
    }

    @Override
    public void killServer() {
        server.kill();
    }

    @Override
    public void startServer() {
        List<String> cmd = persistent()
                ? List.of(REDIS_SERVER, "--port", Integer.toString(port), "--bind", "127.0.0.1", "--daemonize", "no",
                "--save", "", "--appendonly", "yes", "--appendfsync", "always", "--dir", dataDir.toString())
                : List.of(REDIS_SERVER, "--port", Integer.toString(port), "--bind", "127.0.0.1", "--daemonize", "no",
                "--save", "", "--appendonly", "no", "--dir", dataDir.toString());
        server = ServerProcess.start("redis-server:" + port, cmd, dataDir.resolve("redis.log"), port, Duration.ofSeconds(20));
    }

    @Override
    public void pauseServer() {
        server.pause();
    }

    @Override
    public void resumeServer() {
        server.resume();
    }

    @Override
    public void end() {
        if (server != null) {
            server.kill();
            server = null;
        }
    }

    @Override
    public void close() {
        end();
    }
}
