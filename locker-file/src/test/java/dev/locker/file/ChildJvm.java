package dev.locker.file;

import dev.locker.api.KeyColumn;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A {@link ContendingChild} JVM on a lock directory, read line by line; every bound only guards against hanging.
 * Its stderr goes to {@code target/contending-children.log}.
 */
final class ChildJvm implements AutoCloseable {

    final Process process;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

    private ChildJvm(Process process) {
        this.process = process;
        Thread reader = new Thread(() -> {
            try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                for (String line; (line = out.readLine()) != null; ) {
                    lines.add(line);
                }
            } catch (IOException ignored) {
                // the process was killed
            }
            lines.add("EOF");
        });
        reader.setDaemon(true);
        reader.start();
    }

    /** Starts {@code mode} on {@code dir} with a locker of {@code expirySeconds}, under {@code prefix} (a command). */
    static ChildJvm start(List<String> prefix, String mode, Path dir, int expirySeconds, String... locks)
            throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(prefix);
        cmd.addAll(List.of(java, "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
                ContendingChild.class.getName(), mode, dir.toString(), Integer.toString(expirySeconds)));
        cmd.addAll(List.of(locks));
        Path log = Path.of("target", "contending-children.log");
        return new ChildJvm(new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .start());
    }

    static ChildJvm start(String mode, Path dir, int expirySeconds, String... locks) throws IOException {
        return start(List.of(), mode, dir, expirySeconds, locks);
    }

    static String name(KeyColumn lock) {
        return new String(lock.key(), StandardCharsets.UTF_8);
    }

    String expect(String prefix) throws Exception {
        return expect(prefix, 60);
    }

    /** The next line starting with {@code prefix}, "EOF", or "TIMEOUT" (a bound against hanging only). */
    String expect(String prefix, int seconds) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            String line = lines.poll(Math.max(1, end - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (line == null) {
                return "TIMEOUT";
            }
            if (line.startsWith(prefix) || line.equals("EOF")) {
                return line;
            }
        }
    }

    void send(String line) throws IOException {
        process.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
        process.getOutputStream().flush();
    }

    /** Asks a taker to try {@code lock} for up to {@code waitSeconds}: "TOOK ..." or "BUSY ...". */
    String ask(KeyColumn lock, int waitSeconds) throws Exception {
        return ask(name(lock), waitSeconds);
    }

    String ask(String lock, int waitSeconds) throws Exception {
        send(lock + " " + waitSeconds);
        String line;
        do {
            line = expect("", waitSeconds + 60);
        } while (!line.startsWith("TOOK") && !line.startsWith("BUSY") && !line.equals("EOF")
                && !line.equals("TIMEOUT"));
        return line;
    }

    /** Every line printed until the process's output ended. */
    List<String> drain() throws Exception {
        List<String> out = new ArrayList<>();
        while (true) {
            String line = lines.poll(30, TimeUnit.SECONDS);
            if (line == null || line.equals("EOF")) {
                return out;
            }
            out.add(line);
        }
    }

    /** Sends {@code sig} (STOP, CONT) to the process while it lives. */
    void signal(String sig) throws Exception {
        if (process.isAlive()) {
            new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid())).start().waitFor();
        }
    }

    void kill() throws Exception {
        process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    }

    /** Lets a stopped process go on, then kills it. */
    @Override
    public void close() throws Exception {
        signal("CONT");
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
}
