package dev.locker.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/** One CLI run in this JVM, its exit code and what it wrote to stdout and stderr. */
record CliRun(int code, String out, String err) {

    static CliRun run(Map<String, String> env, String... args) {
        return run(new Cli[1], env, args);
    }

    /** Runs with {@code holder[0]} set to the CLI before it starts, so a test can interrupt it. */
    static CliRun run(Cli[] holder, Map<String, String> env, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
        PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
        Cli cli = new Cli(o, e, env, false);
        holder[0] = cli;
        int code = cli.run(args);
        return new CliRun(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Override
    public String toString() {
        return "exit " + code + "\n--- stdout\n" + out + "--- stderr\n" + err;
    }
}
