package dev.locker.faults;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The LD_PRELOAD shim that shifts a server's wall clock ({@code clockshift.c}, compiled with gcc once per harness JVM):
 * {@code CLOCKSHIFT_MS} milliseconds added to {@code CLOCK_REALTIME} and {@code gettimeofday}, the monotonic clocks
 * left alone. libfaketime crashes redis-server at start, so Redis servers get this shim instead.
 */
final class ClockShift {

    private static final String GCC = System.getenv().getOrDefault("CC", "gcc");
    private static Path library;
    private static String failure;

    private ClockShift() {
    }

    /**
     * Why the shim cannot be built here, or null when it can.
     *
     * @return the reason, or null
     */
    static synchronized String unavailable() {
        if (library == null && failure == null) {
            build();
        }
        return failure;
    }

    /**
     * The compiled shim.
     *
     * @return its path
     */
    static synchronized Path library() {
        String why = unavailable();
        if (why != null) {
            throw new IllegalStateException(why);
        }
        return library;
    }

    private static void build() {
        try {
            Path dir = Files.createTempDirectory("faults-clockshift");
            dir.toFile().deleteOnExit();
            Path source = dir.resolve("clockshift.c");
            try (InputStream in = ClockShift.class.getResourceAsStream("clockshift.c")) {
                if (in == null) {
                    failure = "clockshift.c is missing from the class path";
                    return;
                }
                Files.copy(in, source, StandardCopyOption.REPLACE_EXISTING);
            }
            Path so = dir.resolve("clockshift.so");
            Process p = new ProcessBuilder(List.of(GCC, "-shared", "-fPIC", "-O2", "-o", so.toString(), source.toString()))
                    .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0 || !Files.exists(so)) {
                failure = "cannot compile the clock shim with " + GCC + ": " + out.trim();
                return;
            }
            source.toFile().deleteOnExit();
            so.toFile().deleteOnExit();
            library = so;
        } catch (IOException e) {
            failure = "no C compiler for the clock shim (" + GCC + ": " + e.getMessage() + ")";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failure = "interrupted while compiling the clock shim";
        }
    }
}
