package dev.locker.redis;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
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
import java.util.stream.Stream;

/**
 * A real {@code redis-server} (Debian's, {@code /usr/bin/redis-server}) started by a test on a free loopback port,
 * in a temporary directory of its own.
 *
 * <p>It cannot outlive the test JVM: the server runs under a tiny {@code sh} watchdog that blocks reading its stdin,
 * a pipe only this JVM holds; when the JVM dies (even by {@code kill -9}), the pipe closes and the watchdog kills the
 * server. A shutdown hook stops servers on a normal exit too. Servers are stopped by their own pid, never by name.
 */
public final class RedisServerProcess implements AutoCloseable {

    static final String REDIS_SERVER = System.getenv().getOrDefault("REDIS_SERVER", "/usr/bin/redis-server");
    static final String REDIS_CLI = System.getenv().getOrDefault("REDIS_CLI", "/usr/bin/redis-cli");

    private static final Set<RedisServerProcess> RUNNING = ConcurrentHashMap.newKeySet();
    /** sh -c WATCHDOG sh OUTFILE COMMAND ARGS...: prints the server's pid, then waits for stdin to close. */
    private static final String WATCHDOG =
            "out=\"$1\"; shift; \"$@\" >>\"$out\" 2>&1 </dev/null & p=$!; echo $p; cat >/dev/null; kill -9 $p 2>/dev/null";

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (RedisServerProcess s : RUNNING) {
                s.stopQuietly();
            }
        }, "redis-server-reaper"));
    }

    private final int port;
    private final Path dir;
    private final List<String> args;
    private Process watchdog;
    private long pid;

    private RedisServerProcess(int port, Path dir, List<String> args) {
        this.port = port;
        this.dir = dir;
        this.args = args;
    }

    /** A throw-away server: no RDB snapshots, no AOF (a restart loses everything). */
    public static RedisServerProcess start(String... extraArgs) {
        List<String> args = new ArrayList<>(List.of("--save", "", "--appendonly", "no"));
        args.addAll(Arrays.asList(extraArgs));
        return startWith(args, false);
    }

    /** A server whose data survives kill -9: AOF with fsync on every write. */
    static RedisServerProcess startPersistent(String... extraArgs) {
        List<String> args = new ArrayList<>(List.of("--save", "", "--appendonly", "yes", "--appendfsync", "always"));
        args.addAll(Arrays.asList(extraArgs));
        return startWith(args, false);
    }

    /** Several servers need {@code port + 10000} free as well (Redis Cluster's bus port). */
    static RedisServerProcess startWith(List<String> args, boolean needsBusPort) {
        IllegalStateException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            int port = freePort(needsBusPort);
            Path dir;
            try {
                dir = Files.createTempDirectory("locker-redis-" + port + "-");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            RedisServerProcess s = new RedisServerProcess(port, dir, List.copyOf(args));
            try {
                s.launch();
                return s;
            } catch (IllegalStateException e) {
                last = e;
                s.stopQuietly();
                s.deleteDir();
            }
        }
        throw last;
    }

    private synchronized void launch() {
        launch(false);
    }

    private synchronized void launch(boolean whileLoading) {
        List<String> cmd = new ArrayList<>(List.of("sh", "-c", WATCHDOG, "sh",
                dir.resolve("stdout.log").toString(), REDIS_SERVER,
                "--port", Integer.toString(port), "--bind", "127.0.0.1", "--daemonize", "no",
                "--dir", dir.toString(), "--logfile", dir.resolve("redis.log").toString()));
        cmd.addAll(args);
        try {
            watchdog = new ProcessBuilder(cmd)
                    .redirectError(dir.resolve("watchdog.err").toFile())
                    .start();
            BufferedReader out = new BufferedReader(new InputStreamReader(watchdog.getInputStream(),
                    StandardCharsets.US_ASCII));
            String line = out.readLine();
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

    /**
     * Waits until the server answers PING (an auth error also proves it is up; with {@code loading}, so does a
     * LOADING error).
     */
    private void awaitPing(Duration max, boolean loading) {
        long deadline = System.nanoTime() + max.toNanos();
        String lastReply = "";
        while (System.nanoTime() < deadline) {
            if (!ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
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
        throw new IllegalStateException("redis-server on port " + port + " did not answer PING (last: " + lastReply
                + "): " + tail(dir.resolve("redis.log")));
    }

    public int port() {
        return port;
    }

    long pid() {
        return pid;
    }

    Path dir() {
        return dir;
    }

    public String uri() {
        return "redis://127.0.0.1:" + port;
    }

    /** {@code kill -9} of the server, by pid; waits until it is gone. */
    synchronized void kill9() {
        if (pid <= 0) {
            endWatchdog();
            return; // already dead: never signal a pid the system may have given to someone else
        }
        ProcessHandle.of(pid).ifPresent(h -> {
            h.destroyForcibly();
            try {
                h.onExit().get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new IllegalStateException("redis-server pid " + pid + " did not die", e);
            }
        });
        pid = 0;
        endWatchdog();
    }

    /** Starts the server again on the same port, directory and options (an AOF there is reloaded). */
    synchronized void restart() {
        kill9();
        launch();
    }

    /** Starts a server that was killed again (same port, directory and options). */
    synchronized void startAgain() {
        if (pid > 0 && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
            return;
        }
        launch();
    }

    /** Starts a killed server again and returns as soon as it answers, even if only with LOADING. */
    synchronized void startAgainWhileLoading() {
        launch(true);
    }

    boolean isAlive() {
        return pid > 0 && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    /** Runs {@code redis-cli -p port args...} and returns its output. */
    String cli(String... cliArgs) {
        List<String> cmd = new ArrayList<>(List.of(REDIS_CLI, "-h", "127.0.0.1", "-p", Integer.toString(port)));
        cmd.addAll(Arrays.asList(cliArgs));
        return run(cmd);
    }

    static String run(List<String> cmd) {
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

    @Override
    public synchronized void close() {
        stopQuietly();
        RUNNING.remove(this);
        deleteDir();
    }

    private synchronized void stopQuietly() {
        try {
            kill9();
        } catch (RuntimeException e) {
            // best effort on shutdown
        }
    }

    private void endWatchdog() {
        if (watchdog == null) {
            return;
        }
        try {
            OutputStream in = watchdog.getOutputStream();
            in.close(); // EOF: the watchdog's cat returns and it exits
        } catch (IOException ignored) {
            // already gone
        }
        try {
            if (!watchdog.waitFor(5, TimeUnit.SECONDS)) {
                watchdog.destroyForcibly();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        watchdog = null;
    }

    private void deleteDir() {
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // temp files; not worth failing a test
        }
    }

    static int freePort(boolean needsBusPort) {
        for (int i = 0; i < 200; i++) {
            int candidate = needsBusPort ? ThreadLocalRandom.current().nextInt(20000, 30000) : 0;
            try (ServerSocket s = new ServerSocket(candidate, 1, InetAddress.getLoopbackAddress())) {
                int port = s.getLocalPort();
                if (!needsBusPort) {
                    return port;
                }
                try (ServerSocket bus = new ServerSocket(port + 10000, 1, InetAddress.getLoopbackAddress())) {
                    return bus.getLocalPort() - 10000;
                }
            } catch (IOException taken) {
                // try another
            }
        }
        throw new IllegalStateException("no free loopback port found");
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 15), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public String toString() {
        return "redis-server[port=" + port + ", pid=" + pid + "]";
    }
}
