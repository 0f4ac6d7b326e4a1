package dev.locker.faults;

import dev.locker.testkit.FaultProxy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Debian's {@code redis-server} (or {@code $REDIS_SERVER}), a fresh one per run on a free loopback port, started by
 * the harness so that it can be killed, restarted on the same port and paused by pid. Without persistence by default;
 * with {@code appendonly yes --appendfsync always} for {@link Scenario#SERVER_RESTART_AOF}. The locker URI sets one
 * restart guard for every worker, the longest expiry of the run, except with AOF (where claims survive) and in the
 * control scenario, which switches it off on purpose.
 *
 * <p>The failover scenarios run a master and a replica behind a {@link FaultProxy} (the workers' one address), with
 * {@code replicas=1}; the slot migration runs a Redis Cluster of three masters; the mixed-expiry restart gives half
 * the workers a 5 s expiry and half 500 ms, every locker's restart guard at 5 s.
 */
public final class RedisBackend implements Backend {

    private static final String REDIS_SERVER = System.getenv().getOrDefault("REDIS_SERVER", "/usr/bin/redis-server");
    private static final String REDIS_CLI = System.getenv().getOrDefault("REDIS_CLI", "/usr/bin/redis-cli");
    /** How far the promoted replica's wall clock runs ahead in {@link Scenario#REDIS_FAILOVER_CLOCK_AHEAD}. */
    static final Duration REPLICA_CLOCK_AHEAD = Duration.ofSeconds(30);
    /** How far it runs ahead in {@link Scenario#REDIS_FAILOVER_CLOCK_WITHIN_BOUND}, and the bound the lockers are told. */
    static final Duration REPLICA_CLOCK_AHEAD_WITHIN = Duration.ofSeconds(1);
    static final Duration TOLD_SERVER_CLOCK_SKEW = Duration.ofMillis(1200);
    /** The two expiries of {@link Scenario#MIXED_EXPIRY_RESTART}: workers 0 and 1 get the long one. */
    static final Duration LONG_EXPIRY = Duration.ofSeconds(5);
    static final Duration SHORT_EXPIRY = Duration.ofMillis(1200);

    private final Path dir;
    private Scenario scenario;
    private Duration expiry;
    private int port;
    private Path dataDir;
    private ServerProcess server;
    // failover: the replica and the forwarder in front of whichever is master
    private int replicaPort;
    private ServerProcess replica;
    private FaultProxy forwarder;
    // cluster: three masters
    private final List<Integer> clusterPorts = new ArrayList<>();
    private final List<ServerProcess> clusterNodes = new ArrayList<>();

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
            case REDIS_SLOT_MIGRATION -> Files.isExecutable(Path.of(REDIS_CLI)) ? null
                    : "redis-cli is not installed (" + REDIS_CLI + ")";
            default -> s.onlyOn(name());
        };
    }


    @Override
    public boolean isControl(Scenario s) {
        return s == Scenario.CONTROL_NO_GUARD
                || s == Scenario.REDIS_FAILOVER_CLOCK_AHEAD;
    }

    @Override
    public void begin(Scenario s, Duration expiry) {
        this.scenario = s;
        this.expiry = expiry;
        this.port = ServerProcess.freePort();
        dataDir = mkdirs(dir.resolve("redis-" + s.name().toLowerCase() + "-" + port));
        switch (s) {
            case REDIS_SLOT_MIGRATION -> startCluster();
            case REDIS_FAILOVER, REDIS_FAILOVER_CLOCK_AHEAD, REDIS_FAILOVER_CLOCK_WITHIN_BOUND -> {
                server = startNode(port, "master", List.of(), Duration.ZERO);
                replicaPort = ServerProcess.freePort();
                Duration ahead = s == Scenario.REDIS_FAILOVER_CLOCK_AHEAD ? REPLICA_CLOCK_AHEAD
                        : s == Scenario.REDIS_FAILOVER_CLOCK_WITHIN_BOUND ? REPLICA_CLOCK_AHEAD_WITHIN : Duration.ZERO;
                replica = startNode(replicaPort, "replica", List.of("--replicaof", "127.0.0.1", Integer.toString(port)),
                        ahead);
                awaitInSync(replicaPort);
                forwarder = new FaultProxy("127.0.0.1", port);
            }
            default -> startServer();
        }
    }

    private static Path mkdirs(Path p) {
        try {
            return Files.createDirectories(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private boolean persistent() {
        return scenario == Scenario.SERVER_RESTART_AOF;
    }

    @Override
    public String uri(String hostPort) {
        return uri(0, hostPort);
    }

    @Override
    public String uri(int worker, String hostPort) {
        // one restart guard for every locker of a run: the longest expiry any of them uses (the default, 60 s,
        // would keep a fresh server refusing past the liveness bound)
        String guard = "&restartGuard=" + (scenario == Scenario.MIXED_EXPIRY_RESTART ? LONG_EXPIRY : expiry).toMillis()
                + "ms";
        String options = switch (scenario) {
            case SERVER_RESTART_AOF, CONTROL_NO_GUARD -> "&restartGuard=0";
            case REDIS_FAILOVER -> guard + "&replicas=1";
            case REDIS_FAILOVER_CLOCK_AHEAD -> guard + "&replicas=1";
            case REDIS_FAILOVER_CLOCK_WITHIN_BOUND -> guard + "&replicas=1&serverClockSkew="
                    + TOLD_SERVER_CLOCK_SKEW.toMillis() + "ms";
            default -> guard;
        };
        Duration e = scenario != Scenario.MIXED_EXPIRY_RESTART ? expiry : worker < 2 ? LONG_EXPIRY : SHORT_EXPIRY;
        String hosts = scenario == Scenario.REDIS_SLOT_MIGRATION
                ? String.join(",", clusterPorts.stream().map(p -> "127.0.0.1:" + p).toList()) : hostPort;
        return "redis://" + hosts + "?expiry=" + e.toMillis() + "ms&timeout=2s" + options;
    }

    @Override
    public String serverAddress() {
        if (scenario == Scenario.REDIS_SLOT_MIGRATION) {
            return null; // the URI names the cluster's nodes
        }
        return "127.0.0.1:" + (forwarder != null ? forwarder.port() : port);
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

    /** A server without persistence on {@code p}, its files in a directory of its own, its clock {@code ahead}. */
    private ServerProcess startNode(int p, String role, List<String> extra, Duration ahead) {
        Path d = mkdirs(dataDir.resolve(role + "-" + p));
        List<String> cmd = new ArrayList<>(List.of(REDIS_SERVER, "--port", Integer.toString(p), "--bind", "127.0.0.1",
                "--daemonize", "no", "--save", "", "--appendonly", "no", "--dir", d.toString(),
                // a replica's first sync at once: the default waits 5 s for more replicas to share one transfer
                "--repl-diskless-sync-delay", "0"));
        cmd.addAll(extra);
        Map<String, String> env = ahead.isZero() ? Map.of()
                : Map.of("LD_PRELOAD", ClockShift.library().toString(), "CLOCKSHIFT_MS", Long.toString(ahead.toMillis()));
        return ServerProcess.start("redis-" + role + ":" + p, cmd, env, d.resolve("redis.log"), p, Duration.ofSeconds(20));
    }

    /**
     * The failover: SIGKILL of the master, {@code REPLICAOF NO ONE} on the replica, the forwarder switched to it, and
     * the old master started empty on its port as the new master's replica (so {@code replicas=1} can be met again).
     *
     * @return what was done, for the timeline
     */
    String failover() {
        server.kill();
        String promoted = command(replicaPort, "REPLICAOF", "NO", "ONE");
        forwarder.switchTo("127.0.0.1", replicaPort);
        int newReplicaPort = port;
        port = replicaPort;
        replicaPort = newReplicaPort;
        ServerProcess promotedServer = replica;
        replica = startNode(replicaPort, "rejoined", List.of("--replicaof", "127.0.0.1", Integer.toString(port)), Duration.ZERO);
        server = promotedServer;
        return "master SIGKILLed, replica :" + port + " promoted (" + promoted.trim() + "), forwarder switched, old "
                + "master back empty as its replica on :" + replicaPort;
    }

    /** Waits until the replica on {@code p} has finished its first sync. */
    void awaitInSync(int p) {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!command(p, "INFO", "replication").contains("master_link_status:up")) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("replica :" + p + " did not sync within 20 s; see " + dataDir);
            }
            sleep(50);
        }
    }

    /** Waits until the current replica (after {@link #failover()}, the rejoined old master) is in sync. */
    void awaitReplicaInSync() {
        awaitInSync(replicaPort);
    }

    // ---- cluster ----

    private void startCluster() {
        clusterPorts.clear();
        clusterNodes.clear();
        for (int i = 0; i < 3; i++) {
            int p = i == 0 ? port : ServerProcess.freePort();
            clusterPorts.add(p);
            clusterNodes.add(startNode(p, "node", List.of("--cluster-enabled", "yes", "--cluster-config-file",
                    "nodes.conf", "--cluster-node-timeout", "5000"), Duration.ZERO));
        }
        List<String> create = new ArrayList<>(List.of(REDIS_CLI, "--cluster", "create"));
        clusterPorts.forEach(p -> create.add("127.0.0.1:" + p));
        create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
        String out = run(create);
        if (!out.contains("All 16384 slots covered")) {
            throw new IllegalStateException("redis-cli --cluster create failed:\n" + out);
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        for (int p : clusterPorts) {
            while (!cli(p, "CLUSTER", "INFO").contains("cluster_state:ok")) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("the cluster did not reach cluster_state:ok; see " + dataDir);
                }
                sleep(50);
            }
        }
    }

    /**
     * Migrates the slot of {@code lock}'s keys to the next master, as {@code redis-cli --cluster reshard} does, slowly:
     * the slot stays IMPORTING/MIGRATING for {@code linger}, then its keys move one by one, {@code gap} apart, then
     * {@code SETSLOT NODE} on every master.
     *
     * @param lock   the lock's name (a part of its keys' names)
     * @param linger how long the slot stays half-moved before its keys move
     * @param gap    the pause between two keys' {@code MIGRATE}
     * @param step   told each step, for the timeline
     * @return false when no key of the lock was found
     */
    boolean migrateSlotOf(String lock, Duration linger, Duration gap, java.util.function.Consumer<String> step) {
        int source = -1;
        String key = null;
        for (int i = 0; i < clusterPorts.size() && key == null; i++) {
            for (String k : cli(clusterPorts.get(i), "--scan", "--pattern", "*" + lock + "*").split("\n")) {
                if (!k.isBlank()) {
                    key = k.trim();
                    source = i;
                    break;
                }
            }
        }
        if (key == null) {
            return false;
        }
        int src = clusterPorts.get(source);
        int dst = clusterPorts.get((source + 1) % clusterPorts.size());
        String slot = cli(src, "CLUSTER", "KEYSLOT", key).trim();
        String srcId = cli(src, "CLUSTER", "MYID").trim();
        String dstId = cli(dst, "CLUSTER", "MYID").trim();
        expectOk(cli(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcId));
        expectOk(cli(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstId));
        step.accept("SLOT_MIGRATING slot " + slot + " (key " + key + ") :" + src + " -> :" + dst);
        sleep(linger.toMillis());
        int moved = 0;
        while (true) {
            Set<String> keys = new LinkedHashSet<>();
            for (String k : cli(src, "CLUSTER", "GETKEYSINSLOT", slot, "10").split("\n")) {
                if (!k.isBlank()) {
                    keys.add(k.trim());
                }
            }
            if (keys.isEmpty()) {
                break;
            }
            for (String k : keys) {
                String r = cli(src, "MIGRATE", "127.0.0.1", Integer.toString(dst), k, "0", "5000");
                if (!r.contains("OK") && !r.contains("NOKEY")) {
                    throw new IllegalStateException("MIGRATE " + k + " failed: " + r.trim());
                }
                moved++;
                sleep(gap.toMillis());
            }
        }
        expectOk(cli(dst, "CLUSTER", "SETSLOT", slot, "NODE", dstId));
        expectOk(cli(src, "CLUSTER", "SETSLOT", slot, "NODE", dstId));
        for (int p : clusterPorts) {
            if (p != src && p != dst) {
                expectOk(cli(p, "CLUSTER", "SETSLOT", slot, "NODE", dstId));
            }
        }
        step.accept("SLOT_MIGRATED slot " + slot + " to :" + dst + " (" + moved + " keys moved)");
        return true;
    }

    private static void expectOk(String reply) {
        if (!reply.trim().equals("OK")) {
            throw new IllegalStateException("redis-cli answered: " + reply.trim());
        }
    }

    /**
     * One command over RESP on a socket of its own, without a redis-cli process: the failover must be quick.
     *
     * @return the reply's text (a status, an error or a bulk string)
     */
    static String command(int p, String... args) {
        try (java.net.Socket s = new java.net.Socket(java.net.InetAddress.getLoopbackAddress(), p)) {
            s.setSoTimeout(5000);
            StringBuilder req = new StringBuilder("*").append(args.length).append("\r\n");
            for (String a : args) {
                req.append('$').append(a.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(a).append("\r\n");
            }
            s.getOutputStream().write(req.toString().getBytes(StandardCharsets.UTF_8));
            s.getOutputStream().flush();
            java.io.DataInputStream in = new java.io.DataInputStream(new java.io.BufferedInputStream(s.getInputStream()));
            String line = readLine(in);
            if (!line.startsWith("$")) {
                return line;
            }
            int len = Integer.parseInt(line.substring(1));
            if (len < 0) {
                return "";
            }
            byte[] body = new byte[len];
            in.readFully(body);
            return new String(body, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("redis :" + p + " " + args[0] + ": " + e.getMessage(), e);
        }
    }

    private static String readLine(java.io.InputStream in) throws IOException {
        StringBuilder sb = new StringBuilder();
        int c;
        while ((c = in.read()) >= 0 && c != '\n') {
            if (c != '\r') {
                sb.append((char) c);
            }
        }
        return sb.toString();
    }

    private static String cli(int p, String... args) {
        List<String> cmd = new ArrayList<>(List.of(REDIS_CLI, "-h", "127.0.0.1", "-p", Integer.toString(p)));
        cmd.addAll(List.of(args));
        return run(cmd);
    }

    private static String run(List<String> cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(cmd + " did not finish within 60 s");
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
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
    public void pauseServer() {
        server.pause();
    }

    @Override
    public void resumeServer() {
        server.resume();
    }

    @Override
    public void end() {
        if (forwarder != null) {
            forwarder.close();
            forwarder = null;
        }
        if (replica != null) {
            replica.kill();
            replica = null;
        }
        clusterNodes.forEach(ServerProcess::kill);
        clusterNodes.clear();
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
