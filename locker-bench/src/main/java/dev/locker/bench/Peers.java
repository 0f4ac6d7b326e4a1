package dev.locker.bench;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/** Child JVMs of the cross-process rows ({@link Peer}), and the Redis housekeeping between their runs. */
final class Peers {

    /** A reader thread per peer: sixteen peers print at once, and a shared pool of one thread would serialise them. */
    private static final ExecutorService READERS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "peer-reader");
        t.setDaemon(true);
        return t;
    });

    private Peers() {
    }

    /** Starts a {@link Peer} JVM on this classpath; its stdout lines, once it exits (stderr is passed through). */
    static CompletableFuture<List<String>> start(String... args) throws IOException {
        return withHeap("4g", args);
    }

    /** Like {@link #start(String...)}, with a heap of at most {@code maxHeap} (such as "256m"). */
    static CompletableFuture<List<String>> withHeap(String maxHeap, String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), "-Xmx" + maxHeap, "-XX:+UseParallelGC",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", Peer.class.getName()));
        cmd.addAll(List.of(args));
        // a peer's stderr goes to a file: a client that gives out can print a stack trace per request (Redisson at a
        // million held locks printed 170k lines); a failure names its last lines
        Path err = Files.createTempFile("locker-bench-peer", ".err");
        Process p = new ProcessBuilder(cmd).redirectError(err.toFile()).start();
        return CompletableFuture.supplyAsync(() -> {
            List<String> lines = new ArrayList<>();
            try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
                    StandardCharsets.US_ASCII))) {
                for (String line; (line = in.readLine()) != null; ) {
                    lines.add(line);
                }
                if (p.waitFor() != 0) {
                    List<String> errors = Files.readAllLines(err, StandardCharsets.UTF_8);
                    throw new IllegalStateException("peer " + String.join(" ", args) + " failed: "
                            + String.join(" | ", errors.subList(Math.max(0, errors.size() - 3), errors.size())));
                }
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            } finally {
                try {
                    Files.deleteIfExists(err);
                } catch (IOException ignored) {
                    // a temporary file left behind
                }
            }
            return lines;
        }, READERS);
    }

    static void flush(int port) {
        try (Jedis j = admin(port, 300_000)) { // a million held locks take seconds to drop
            j.flushAll();
        }
    }

    /** A plain connection for the runner's own commands, speaking RESP2 (Jedis 8 warns on every connection else). */
    static Jedis admin(int port, int timeoutMs) {
        return new Jedis(new HostAndPort("127.0.0.1", port),
                DefaultJedisClientConfig.builder().timeoutMillis(timeoutMs).autoNegotiateProtocol(false).build());
    }
}
