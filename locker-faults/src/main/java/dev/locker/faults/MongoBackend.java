package dev.locker.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * mongo-java-server (the in-memory MongoDB wire-protocol server the project tests on) in a JVM of its own
 * ({@link MongoServerMain}), started once and shared by the runs, so that it can be killed, restarted on the same port
 * and paused by pid. A restart loses every document: Locker promises nothing then (a MongoDB that loses acknowledged
 * majority writes breaks the assumption of {@code MongoLocker}'s safety argument), so that scenario is run and
 * reported, never held to the safety checks.
 */
public final class MongoBackend implements Backend {

    private final Path dir;
    private Duration expiry;
    private int port;
    private ServerProcess server;

    /**
     * A backend whose server keeps its log under {@code dir}.
     *
     * @param dir a directory for the server's log
     */
    public MongoBackend(Path dir) {
        this.dir = dir;
    }

    @Override
    public String name() {
        return "mongo";
    }

    @Override
    public String inapplicable(Scenario s) {
        return switch (s) {
            case SERVER_RESTART_AOF -> "Redis only (append-only file)";
            case REGION_SERVER_ABORT -> "HBase only";
            case CONTROL_NO_GUARD -> "Redis only (the restart guard); MongoDB's own restart shows the same loss";
            default -> s.onlyOn(name());
        };
    }

    @Override
    public boolean promisesSafety(Scenario s) {
        return s != Scenario.SERVER_RESTART && Backend.super.promisesSafety(s);
    }

    @Override
    public void begin(Scenario s, Duration expiry) {
        this.expiry = expiry;
        if (server == null || !server.isAlive()) {
            if (port == 0) {
                port = ServerProcess.freePort();
            }
            startServer();
        }
    }

    @Override
    public String uri(String hostPort) {
        return "mongodb://" + hostPort + "/?serverSelectionTimeoutMS=1000&connectTimeoutMS=1000&socketTimeoutMS=2000"
                + "&expiry=" + expiry.toMillis() + "ms";
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
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = List.of(java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Dfaults.log=" + dir.resolve("mongo-server.jvm.log"), "-cp", System.getProperty("java.class.path"), MongoServerMain.class.getName(), Integer.toString(port));
        server = ServerProcess.start("mongo-java-server:" + port, cmd, dir.resolve("mongo-server.log"), port,
                Duration.ofSeconds(60));
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
        // the server is shared by the runs (lock names differ per run)
    }

    @Override
    public void close() {
        if (server != null) {
            server.kill();
            server = null;
        }
    }
}
