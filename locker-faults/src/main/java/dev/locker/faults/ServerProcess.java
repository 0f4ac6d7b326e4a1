package dev.locker.faults;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A server process the harness can kill ({@code SIGKILL}), pause ({@code SIGSTOP}) and resume by its pid.
 *
 * <p>Invariant: it cannot outlive the harness JVM. It runs under a small {@code sh} watchdog that blocks reading its
 * stdin, a pipe only this JVM holds; when the JVM dies (even by {@code kill -9}) the pipe closes and the watchdog
 * kills the server (after a {@code SIGCONT}, in case it was paused). A shutdown hook stops servers on a normal exit.
 */
final class ServerProcess {

    private static final String WATCHDOG = "out=\"$1\"; shift; \"$@\" >>\"$out\" 2>&1 </dev/null & p=$!; echo $p; "
            + "cat >/dev/null; kill -CONT $p 2>/dev/null; kill -9 $p 2>/dev/null";
    private static final Set<ServerProcess> RUNNING = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> RUNNING.forEach(ServerProcess::kill), "faults-server-reaper"));
    }

    private final String name;
    private final Process watchdog;
    private final long pid;
    private final Path log;

    private ServerProcess(String name, Process watchdog, long pid, Path log) {
        this.name = name;
        this.watchdog = watchdog;
        this.pid = pid;
        this.log = log;
    }

    /**
     * Starts {@code command}, its output appended to {@code log}, and waits until {@code port} accepts connections.
     */
    static ServerProcess start(String name, List<String> command, Path log, int port, Duration max) {
        return start(name, command, java.util.Map.of(), log, port, max);
    }

    /** As {@link #start(String, List, Path, int, Duration)}, with {@code env} added to the server's environment. */
    static ServerProcess start(String name, List<String> command, java.util.Map<String, String> env, Path log, int port,
                               Duration max) {
        List<String> cmd = new ArrayList<>(List.of("sh", "-c", WATCHDOG, "sh", log.toString()));
        cmd.addAll(command);
        Process watchdog;
        long pid;
        try {
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
            pb.environment().putAll(env);
            watchdog = pb.start();
            String line = new BufferedReader(new InputStreamReader(watchdog.getInputStream(), StandardCharsets.US_ASCII))
                    .readLine();
            if (line == null) {
                throw new IllegalStateException(name + ": the watchdog printed no pid; see " + log);
            }
            pid = Long.parseLong(line.trim());
        } catch (IOException e) {
            throw new IllegalStateException("cannot start " + name + ": " + e, e);
        }
        ServerProcess p = new ServerProcess(name, watchdog, pid, log);
        RUNNING.add(p);
        try {
            p.awaitPort(port, max);
        } catch (RuntimeException e) {
            p.kill();
            throw e;
        }
        return p;
    }

    private void awaitPort(int port, Duration max) {
        long deadline = System.nanoTime() + max.toNanos();
        while (System.nanoTime() - deadline < 0) {
            if (!isAlive()) {
                throw new IllegalStateException(name + " exited at start; see " + log);
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
                return;
            } catch (IOException notYet) {
                sleep(20);
            }
        }
        throw new IllegalStateException(name + " did not listen on port " + port + " within " + max + "; see " + log);
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException("no free port", e);
        }
    }

    long pid() {
        return pid;
    }

    boolean isAlive() {
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    /** SIGKILL, and waits until it is gone. Idempotent. */
    void kill() {
        Signals.kill(pid); // a paused (SIGSTOP) process dies on SIGKILL too
        watchdog.destroyForcibly();
        RUNNING.remove(this);
    }

    void pause() {
        Signals.stop(pid);
    }

    void resume() {
        Signals.cont(pid);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    @Override
    public String toString() {
        return name + "[pid " + pid + "]";
    }
}
