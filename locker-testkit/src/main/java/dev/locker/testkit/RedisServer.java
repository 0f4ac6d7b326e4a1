package dev.locker.testkit;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A real, throw-away {@code redis-server} (Debian's, or {@code $REDIS_SERVER}) on a free loopback port, for tests of
 * modules that sit on top of a backend (metrics, Spring Boot, a user's project). No persistence: a stopped server is
 * gone with its data.
 *
 * <p>Invariant: it cannot outlive the test JVM. The server runs under a small {@code sh} watchdog that blocks reading
 * its stdin, a pipe only this JVM holds; when the JVM dies (even by {@code kill -9}) the pipe closes and the watchdog
 * kills the server; a shutdown hook stops servers on a normal exit. A server is stopped by its own pid, never by name.
 */
public final class RedisServer implements AutoCloseable {

    private static final String REDIS_SERVER = System.getenv().getOrDefault("REDIS_SERVER", "/usr/bin/redis-server");
    private static final String WATCHDOG =
            "out=\"$1\"; shift; \"$@\" >>\"$out\" 2>&1 </dev/null & p=$!; echo $p; cat >/dev/null; kill -9 $p 2>/dev/null";
    private static final Set<RedisServer> RUNNING = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> RUNNING.forEach(RedisServer::stop), "redis-server-reaper"));
    }

    private final int port;
    private final Path dir;
    private final Process watchdog;
    private final long pid;

    private RedisServer(int port, Path dir, Process watchdog, long pid) {
        this.port = port;
        this.dir = dir;
        this.watchdog = watchdog;
        this.pid = pid;
    }

    /**
     * Starts a server and waits until it answers PING.
     *
     * @return the running server
     * @throws IllegalStateException when no server could be started (the message says why)
     */
    public static RedisServer start() {
        IllegalStateException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            try {
                return launch(freePort());
            } catch (IllegalStateException e) {
                last = e; // most likely the port was taken meanwhile
            }
        }
        throw last;
    }

    private static RedisServer launch(int port) {
        Path dir;
        try {
            dir = Files.createTempDirectory("locker-redis-" + port + "-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> cmd = new ArrayList<>(List.of("sh", "-c", WATCHDOG, "sh", dir.resolve("stdout.log").toString(),
                REDIS_SERVER, "--port", Integer.toString(port), "--bind", "127.0.0.1", "--daemonize", "no",
                "--save", "", "--appendonly", "no", "--dir", dir.toString()));
        Process watchdog;
        long pid;
        try {
            watchdog = new ProcessBuilder(cmd).redirectError(dir.resolve("watchdog.err").toFile()).start();
            String line = new BufferedReader(new InputStreamReader(watchdog.getInputStream(), StandardCharsets.US_ASCII))
                    .readLine();
            if (line == null) {
                throw new IllegalStateException("redis-server watchdog printed no pid; see " + dir);
            }
            pid = Long.parseLong(line.trim());
        } catch (IOException e) {
            throw new IllegalStateException("cannot start " + REDIS_SERVER + ": " + e, e);
        }
        RedisServer server = new RedisServer(port, dir, watchdog, pid);
        RUNNING.add(server);
        try {
            server.awaitPing(Duration.ofSeconds(20));
        } catch (IllegalStateException e) {
            server.stop();
            throw e;
        }
        return server;
    }

    private void awaitPing(Duration max) {
        long deadline = System.nanoTime() + max.toNanos();
        while (System.nanoTime() - deadline < 0) {
            if (!ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                throw new IllegalStateException("redis-server on port " + port + " exited at start; see " + dir);
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
                s.setSoTimeout(1000);
                s.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
                String reply = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII))
                        .readLine();
                if (reply != null && reply.startsWith("+PONG")) {
                    return;
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for redis-server", e);
            }
        }
        throw new IllegalStateException("redis-server on port " + port + " did not answer PING within " + max);
    }

    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** @return the loopback port the server listens on */
    public int port() {
        return port;
    }

    /**
     * A locker URI for this fresh server: {@code redis://127.0.0.1:port?restartGuard=0}. The restart guard is off
     * because the server was just started on purpose (a locker would otherwise refuse grants for one expiry).
     *
     * @return the URI
     */
    public String uri() {
        return "redis://127.0.0.1:" + port + "?restartGuard=0";
    }

    /** Kills the server by its pid ({@code kill -9}: no goodbye to clients) and waits until it is gone. Idempotent. */
    public void stop() {
        ProcessHandle.of(pid).ifPresent(h -> {
            h.destroyForcibly();
            h.onExit().join();
        });
        watchdog.destroyForcibly();
        RUNNING.remove(this);
    }

    @Override
    public void close() {
        stop();
    }

    @Override
    public String toString() {
        return "RedisServer[127.0.0.1:" + port + ", pid " + pid + "]";
    }
}
