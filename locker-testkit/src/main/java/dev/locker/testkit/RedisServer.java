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
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * A real, throw-away {@code redis-server} (Debian's, or {@code $REDIS_SERVER}) on a free loopback port, in a temporary
 * directory of its own. The one Redis launcher of every module's tests: a plain server, one with extra options or
 * persistence, a {@link Cluster}, or the {@link #shared()} server that test classes of one JVM share.
 *
 * <p>Invariant: it cannot outlive the test JVM. The server runs under a small {@code sh} watchdog that blocks reading
 * its stdin, a pipe only this JVM holds; when the JVM dies (even by {@code kill -9}) the pipe closes and the watchdog
 * kills the server; a shutdown hook stops servers on a normal exit. A server is stopped by its own pid, never by name.
 */
public final class RedisServer implements AutoCloseable {

    private static final String REDIS_SERVER = System.getenv().getOrDefault("REDIS_SERVER", "/usr/bin/redis-server");
    private static final String REDIS_CLI = System.getenv().getOrDefault("REDIS_CLI", "/usr/bin/redis-cli");
    /** sh -c WATCHDOG sh OUTFILE COMMAND ARGS...: prints the server's pid, then waits for stdin to close. */
    private static final String WATCHDOG =
            "out=\"$1\"; shift; \"$@\" >>\"$out\" 2>&1 </dev/null & p=$!; echo $p; cat >/dev/null; kill -9 $p 2>/dev/null";
    private static final List<String> THROW_AWAY = List.of("--save", "", "--appendonly", "no");
    private static final Set<RedisServer> RUNNING = ConcurrentHashMap.newKeySet();
    private static RedisServer shared; // guarded by RedisServer.class

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> RUNNING.forEach(RedisServer::stopQuietly),
                "redis-server-reaper"));
    }

    private final int port;
    private final Path dir;
    private final List<String> args;
    private Process watchdog; // guarded by this
    private long pid; // guarded by this; 0 while stopped

    private RedisServer(int port, Path dir, List<String> args) {
        this.port = port;
        this.dir = dir;
        this.args = args;
    }

    /**
     * Starts a throw-away server (no RDB snapshots, no AOF) and waits until it answers PING.
     *
     * @param extraArgs more {@code redis-server} options, such as {@code "--requirepass", "pw"}
     * @return the running server
     * @throws IllegalStateException when no server could be started (the message says why)
     */
    public static RedisServer start(String... extraArgs) {
        List<String> all = new ArrayList<>(THROW_AWAY);
        all.addAll(Arrays.asList(extraArgs));
        return startWith(all, false);
    }

    /**
     * Starts a server whose data survives {@code kill -9}: AOF with fsync on every write.
     *
     * @param extraArgs more {@code redis-server} options
     * @return the running server
     */
    public static RedisServer startPersistent(String... extraArgs) {
        List<String> all = new ArrayList<>(List.of("--save", "", "--appendonly", "yes", "--appendfsync", "always"));
        all.addAll(Arrays.asList(extraArgs));
        return startWith(all, false);
    }

    /** A throw-away node for a Redis Cluster: its port plus 10000 is free too, for the cluster bus. */
    private static RedisServer startClusterNode() {
        List<String> all = new ArrayList<>(THROW_AWAY);
        all.addAll(List.of("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "5000"));
        return startWith(all, true);
    }

    /**
     * The server that test classes of this JVM share: started on first use, never stopped by a test. A class that
     * shares it uses a key prefix of its own and never kills, reconfigures or flushes it.
     *
     * @return the shared running server
     */
    public static synchronized RedisServer shared() {
        if (shared == null || !shared.isAlive()) {
            shared = start();
        }
        return shared;
    }

    private static RedisServer startWith(List<String> args, boolean needsBusPort) {
        IllegalStateException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            int port = freePort(needsBusPort);
            Path dir;
            try {
                dir = Files.createTempDirectory("locker-redis-" + port + "-");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            RedisServer server = new RedisServer(port, dir, List.copyOf(args));
            try {
                server.launch(false);
                return server;
            } catch (IllegalStateException e) {
                last = e; // most likely the port was taken meanwhile
                server.close();
            }
        }
        throw last;
    }

    private synchronized void launch(boolean whileLoading) {
        List<String> cmd = new ArrayList<>(List.of("sh", "-c", WATCHDOG, "sh", dir.resolve("stdout.log").toString(),
                REDIS_SERVER, "--port", Integer.toString(port), "--bind", "127.0.0.1", "--daemonize", "no",
                "--dir", dir.toString(), "--logfile", dir.resolve("redis.log").toString()));
        cmd.addAll(args);
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
        RUNNING.add(this);
        awaitPing(Duration.ofSeconds(20), whileLoading);
    }

    /** An auth error also proves the server is up; while loading, so does a LOADING error. */
    private void awaitPing(Duration max, boolean loading) {
        long deadline = System.nanoTime() + max.toNanos();
        String lastReply = "";
        while (System.nanoTime() - deadline < 0) {
            if (!isAlive()) {
                throw new IllegalStateException("redis-server on port " + port + " exited at start: "
                        + tail(dir.resolve("redis.log")));
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
                s.setSoTimeout(1000);
                s.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
                lastReply = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII))
                        .readLine();
                if (lastReply != null && (lastReply.startsWith("+PONG") || lastReply.startsWith("-NOAUTH")
                        || (loading && lastReply.startsWith("-LOADING")))) {
                    return;
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            sleep(20);
        }
        throw new IllegalStateException("redis-server on port " + port + " did not answer PING within " + max
                + " (last: " + lastReply + "): " + tail(dir.resolve("redis.log")));
    }

    /**
     * A free loopback port.
     *
     * @param needsBusPort whether the port plus 10000 must be free too (a Redis Cluster node's bus port)
     * @return the port
     */
    public static int freePort(boolean needsBusPort) {
        for (int i = 0; i < 200; i++) {
            int candidate = needsBusPort ? ThreadLocalRandom.current().nextInt(20000, 30000) : 0;
            try (ServerSocket s = new ServerSocket(candidate, 1, InetAddress.getLoopbackAddress())) {
                int found = s.getLocalPort();
                if (!needsBusPort) {
                    return found;
                }
                try (ServerSocket bus = new ServerSocket(found + 10000, 1, InetAddress.getLoopbackAddress())) {
                    return bus.getLocalPort() - 10000;
                }
            } catch (IOException taken) {
                // try another
            }
        }
        throw new IllegalStateException("no free loopback port found");
    }

    /** @return the loopback port the server listens on */
    public int port() {
        return port;
    }

    /** @return the server's pid, 0 while it is stopped */
    public synchronized long pid() {
        return pid;
    }

    /** @return the server's working directory (its AOF, its log) */
    public Path dir() {
        return dir;
    }

    /**
     * A locker URI for this fresh server: {@code redis://127.0.0.1:port?restartGuard=0}. The restart guard is off
     * because the server was just started on purpose (a locker would otherwise refuse grants for its restart guard,
     * 60 s by default).
     *
     * @return the URI
     */
    public String uri() {
        return address() + "?restartGuard=0";
    }

    /** @return {@code redis://127.0.0.1:port}, with no option: a locker on it keeps its default restart guard */
    public String address() {
        return "redis://127.0.0.1:" + port;
    }

    /** @return whether the server process runs */
    public synchronized boolean isAlive() {
        return pid > 0 && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    /** Kills the server by its pid ({@code kill -9}: no goodbye to clients) and waits until it is gone. Idempotent. */
    public synchronized void kill9() {
        if (pid > 0) { // a dead server's pid may belong to someone else by now: never signal it
            long dying = pid;
            ProcessHandle.of(dying).ifPresent(h -> {
                h.destroyForcibly();
                try {
                    h.onExit().get(10, TimeUnit.SECONDS);
                } catch (Exception e) {
                    throw new IllegalStateException("redis-server pid " + dying + " did not die", e);
                }
            });
            pid = 0;
        }
        endWatchdog();
    }

    /** Kills the server and starts it again on the same port, directory and options (an AOF there is reloaded). */
    public synchronized void restart() {
        kill9();
        launch(false);
    }

    /** Starts a killed server again on the same port, directory and options; a running one is left alone. */
    public synchronized void startAgain() {
        if (!isAlive()) {
            launch(false);
        }
    }

    /** Starts a killed server again and returns as soon as it answers, even if only with LOADING. */
    public synchronized void startAgainWhileLoading() {
        launch(true);
    }

    /**
     * Runs {@code redis-cli} against this server.
     *
     * @param cliArgs the command and its arguments
     * @return what redis-cli printed
     */
    public String cli(String... cliArgs) {
        List<String> cmd = new ArrayList<>(List.of(REDIS_CLI, "-h", "127.0.0.1", "-p", Integer.toString(port)));
        cmd.addAll(Arrays.asList(cliArgs));
        return run(cmd);
    }

    /**
     * Starts a small Redis Cluster: three throw-away masters, no replicas, joined by {@code redis-cli --cluster
     * create}, each reporting {@code cluster_state:ok}.
     *
     * @return the running cluster
     */
    public static Cluster startCluster() {
        Cluster cluster = new Cluster();
        try {
            for (int i = 0; i < 3; i++) {
                cluster.nodes.add(startClusterNode());
            }
            List<String> create = new ArrayList<>(List.of(REDIS_CLI, "--cluster", "create"));
            cluster.nodes.forEach(n -> create.add("127.0.0.1:" + n.port()));
            create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
            String out = run(create);
            if (!out.contains("All 16384 slots covered")) {
                throw new IllegalStateException("redis-cli --cluster create failed:\n" + out);
            }
            for (RedisServer n : cluster.nodes) {
                while (!n.cli("CLUSTER", "INFO").contains("cluster_state:ok")) {
                    sleep(50);
                }
            }
            return cluster;
        } catch (RuntimeException e) {
            cluster.close();
            throw e;
        }
    }

    /** A Redis Cluster of {@link RedisServer} nodes; closing it closes every node. */
    public static final class Cluster implements AutoCloseable {

        private final List<RedisServer> nodes = new ArrayList<>();

        private Cluster() {
        }

        /** @return the nodes, in the order they were started */
        public List<RedisServer> nodes() {
            return nodes;
        }

        /** @return {@code redis://127.0.0.1:p1,127.0.0.1:p2,...}: several hosts mean Cluster mode */
        public String uri() {
            return "redis://" + nodes.stream().map(n -> "127.0.0.1:" + n.port()).collect(Collectors.joining(","));
        }

        @Override
        public void close() {
            nodes.forEach(RedisServer::close);
        }
    }

    /**
     * Runs a command to its end (a minute at most) with stdin closed.
     *
     * @param cmd the command line
     * @return its stdout and stderr
     */
    public static String run(List<String> cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("timed out: " + cmd);
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * Sleeps, turning an interrupt into an unchecked failure (the interrupt flag stays set).
     *
     * @param ms how long
     */
    public static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Kills the server by its pid and waits until it is gone. Idempotent. */
    public void stop() {
        kill9();
        RUNNING.remove(this);
    }

    /** Stops the server and deletes its directory. Idempotent. */
    @Override
    public void close() {
        stopQuietly();
        RUNNING.remove(this);
        deleteDir();
    }

    private void stopQuietly() {
        try {
            kill9();
        } catch (RuntimeException e) {
            // best effort on shutdown
        }
    }

    private synchronized void endWatchdog() {
        if (watchdog == null) {
            return;
        }
        try {
            watchdog.getOutputStream().close(); // EOF: the watchdog's cat returns and it exits
        } catch (IOException ignored) {
            // already gone
        }
        try {
            if (!watchdog.waitFor(5, TimeUnit.SECONDS)) {
                watchdog.destroyForcibly();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            watchdog.destroyForcibly();
        }
        watchdog = null;
    }

    private void deleteDir() {
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // temporary files: not worth failing a test
        }
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 15), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    @Override
    public String toString() {
        return "RedisServer[127.0.0.1:" + port + ", pid " + pid + "]";
    }
}
