package dev.locker.cli;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/**
 * The entry point of {@code locker}: quiet library logging (errors only, all with {@code --verbose}), a stderr that
 * scrubs the URI's secrets from whatever a library prints, and Ctrl-C handling: the running command is asked to
 * stop, and {@code watch} then exits 0.
 */
public final class Main {

    private Main() {
    }

    /**
     * Runs the CLI and exits with its code.
     *
     * @param args the command line
     */
    public static void main(String[] args) {
        boolean verbose = java.util.Arrays.asList(args).contains("--verbose");
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", verbose ? "info" : "error");
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        PrintStream rawErr = System.err;
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
                StandardCharsets.UTF_8);
        PrintStream err = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.err), true,
                StandardCharsets.UTF_8);
        Cli cli = new Cli(out, err, System.getenv(), System.console() != null);
        // libraries that print to System.err (slf4j-simple) pass through the same scrubber as the CLI's own lines
        System.setErr(new PrintStream(new ScrubbingStream(rawErr, cli::scrub), true, StandardCharsets.UTF_8));
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (done.getCount() == 0) {
                return; // a normal exit
            }
            cli.interrupt();
            try {
                done.await(3, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            out.flush();
            Runtime.getRuntime().halt(cli.interruptedCode());
        }, "locker-cli-interrupt"));
        int code = cli.run(args);
        done.countDown();
        out.flush();
        System.exit(code);
    }

    /** Buffers a line, scrubs it, writes it on. */
    private static final class ScrubbingStream extends OutputStream {
        private final PrintStream target;
        private final UnaryOperator<String> scrub;
        private final ByteArrayOutputStream line = new ByteArrayOutputStream();

        ScrubbingStream(PrintStream target, UnaryOperator<String> scrub) {
            this.target = target;
            this.scrub = scrub;
        }

        @Override
        public synchronized void write(int b) {
            line.write(b);
            if (b == '\n') {
                flush();
            }
        }

        @Override
        public synchronized void flush() {
            if (line.size() > 0) {
                target.print(scrub.apply(line.toString(StandardCharsets.UTF_8)));
                line.reset();
            }
            target.flush();
        }
    }
}
