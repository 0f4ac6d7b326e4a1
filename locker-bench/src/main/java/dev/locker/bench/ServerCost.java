package dev.locker.bench;

import dev.locker.api.TemporaryLockingException;
import redis.clients.jedis.Jedis;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Redis server's work per uncontended acquire+release, in instructions counted by valgrind's callgrind: the same
 * count for the same binary and requests however loaded the machine is, so it tells a change to the scripts from the
 * noise that moves the timed rows by 10-20% between runs. Each contender gets a redis-server of its own under
 * callgrind, which counts only inside script and SET calls ({@code --toggle-collect}: what a pair costs the server's
 * command execution, reading and writing the socket excluded, alike for all); counters are zeroed after a warm-up
 * (scripts loaded, the admission marker written) and dumped after the measured pairs.
 *
 * <p>Needs valgrind and callgrind_control (Debian's valgrind package); without them the section says so and adds no
 * row.
 */
final class ServerCost {

    private static final String REDIS_SERVER = System.getenv().getOrDefault("REDIS_SERVER", "/usr/bin/redis-server");

    private ServerCost() {
    }

    static void run(Table table, boolean quick) throws Exception {
        if (!onPath("valgrind") || !onPath("callgrind_control")) {
            System.out.println("  server instructions: skipped (needs valgrind and callgrind_control: apt-get install "
                    + "valgrind)");
            return;
        }
        int pairs = quick ? 1000 : 3000;
        Map<String, Double> perPair = new LinkedHashMap<>();
        List<Counted> servers = new ArrayList<>();
        try {
            for (String name : List.of("locker", "fenced", "raw", "redisson")) {
                servers.add(Counted.start(name)); // they boot side by side: valgrind takes seconds to start one
            }
            for (Counted s : servers) {
                perPair.put(s.name, s.measure(pairs));
            }
        } finally {
            servers.forEach(Counted::close);
        }
        double ours = perPair.get("locker");
        String w = "Redis server instructions per uncontended pair (callgrind; scripts and SET, 1 run of " + pairs + ")";
        table.add(new Table.Row(w, "instr", new Samples().add(ours), "minimal fenced script pair",
                new Samples().add(perPair.get("fenced")), Table.Better.LOWER, null, false));
        table.add(new Table.Row(w, "instr", new Samples().add(ours), "raw SET NX PX + compare-and-delete",
                new Samples().add(perPair.get("raw")), Table.Better.LOWER, null, false));
        // the target: no more server work per pair than Redisson's fenced lock, with every guarantee kept
        table.add(new Table.Row(w, "instr", new Samples().add(ours), "Redisson 3.52 RFencedLock",
                new Samples().add(perPair.get("redisson")), Table.Better.LOWER, 1.0, false));
    }

    private static boolean onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    /** A redis-server under callgrind, and the contender that measures against it. */
    private static final class Counted implements AutoCloseable {
        final String name;
        final int port;
        final Path dir;
        final Process process;

        private Counted(String name, int port, Path dir, Process process) {
            this.name = name;
            this.port = port;
            this.dir = dir;
            this.process = process;
        }

        static Counted start(String name) throws IOException {
            int port;
            try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                port = s.getLocalPort();
            }
            Path dir = Files.createTempDirectory("locker-callgrind-" + name + "-");
            Process p = new ProcessBuilder("valgrind", "--tool=callgrind",
                    "--callgrind-out-file=" + dir.resolve("callgrind.out"), "--toggle-collect=evalGenericCommand",
                    "--toggle-collect=setCommand", REDIS_SERVER, "--port", Integer.toString(port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no", "--dir", dir.toString())
                    .redirectErrorStream(true).redirectOutput(dir.resolve("valgrind.log").toFile()).start();
            return new Counted(name, port, dir, p);
        }

        /** Server instructions per pair over {@code pairs} pairs after a warm-up. */
        double measure(int pairs) throws Exception {
            awaitPing();
            // a guard of 1 s (on, as in the timed rows; its cost per grant does not depend on its length), and an
            // expiry within it, as the builder requires; a pair releases at once, so the expiry costs nothing here
            try (RedisContender c = switch (name) {
                case "locker" -> new RedisContender.Ours(port, Duration.ofSeconds(1), Duration.ofSeconds(1));
                default -> RedisContender.of(name, port);
            }) {
                warmUp(c);
                callgrind("-z"); // from here on
                for (int i = 0; i < pairs; i++) {
                    c.pair("cost");
                }
                long before = dumps();
                callgrind("-d");
                return (double) instructions(before) / pairs;
            }
        }

        private void warmUp(RedisContender c) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            for (int done = 0; done < 100; ) {
                try {
                    c.pair("cost");
                    done++;
                } catch (TemporaryLockingException e) { // the restart guard's second
                    if (System.nanoTime() - deadline > 0) {
                        throw e;
                    }
                    Thread.sleep(100);
                }
            }
        }

        private void awaitPing() throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                try (Jedis j = Peers.admin(port, 5000)) {
                    j.ping();
                    return;
                } catch (RuntimeException notYet) {
                    if (System.nanoTime() - deadline > 0 || !process.isAlive()) {
                        throw new IllegalStateException("redis-server under callgrind did not start; see " + dir,
                                notYet);
                    }
                    Thread.sleep(200);
                }
            }
        }

        private void callgrind(String what) throws IOException, InterruptedException {
            Process p = new ProcessBuilder("callgrind_control", what, Long.toString(process.pid()))
                    .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.waitFor() != 0) {
                throw new IllegalStateException("callgrind_control " + what + " failed: " + out);
            }
        }

        private long dumps() throws IOException {
            try (var files = Files.list(dir)) {
                return files.filter(f -> f.getFileName().toString().startsWith("callgrind.out.")).count();
            }
        }

        /** The instruction total of the dump written after {@code before} earlier dumps (-z itself writes none). */
        private long instructions(long before) throws IOException, InterruptedException {
            Pattern totals = Pattern.compile("^(?:totals|summary): (\\d+)", Pattern.MULTILINE);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (true) {
                List<Path> dumps;
                try (var files = Files.list(dir)) {
                    dumps = files.filter(f -> f.getFileName().toString().startsWith("callgrind.out.")).sorted().toList();
                }
                if (dumps.size() > before) {
                    String text = Files.readString(dumps.get(dumps.size() - 1), StandardCharsets.UTF_8);
                    Matcher m = totals.matcher(text);
                    if (m.find()) {
                        return Long.parseLong(m.group(1));
                    }
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("no callgrind dump with totals in " + dir);
                }
                Thread.sleep(100);
            }
        }

        @Override
        public void close() {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
                Bench.deleteTree(dir); // the server's files and callgrind's dumps
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (IOException e) {
                System.out.println("  (could not delete " + dir + ": " + e + ")");
            }
        }

        @Override
        public String toString() {
            return String.format(Locale.ROOT, "%s on port %d", name, port);
        }
    }
}
