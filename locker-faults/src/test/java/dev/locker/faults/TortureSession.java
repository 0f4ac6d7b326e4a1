package dev.locker.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;

/**
 * What the per-backend torture classes of one test JVM share: one profile and seed, one directory, one report.
 *
 * <p>The classes run at once, one per backend, so the report is rewritten whole after each class ends. The last
 * class to end writes every row. The last run's files are deleted once, before the first class starts a backend.
 */
final class TortureSession {

    static final Profile PROFILE = Profile.fromSystemProperties();
    static final Path ROOT = Path.of(System.getProperty("faults.dir", "target/faults"));
    static final Report REPORT = new Report(PROFILE);

    static {
        deleteLastRun();
        System.out.println("[locker-faults] profile " + PROFILE.name() + ", seed " + PROFILE.seed()
                + " (replay: -Dfaults.profile=" + PROFILE.name() + " -Dfaults.seed=" + PROFILE.seed() + ")");
    }

    private TortureSession() {
    }

    /** Writes the table of every run reported so far to {@code report.md}, and prints it. */
    static synchronized void writeReport() {
        String table = REPORT.markdown();
        try {
            Files.createDirectories(ROOT);
            Files.writeString(ROOT.resolve("report.md"), table);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        System.out.println("[locker-faults] report (" + ROOT.resolve("report.md") + "):\n" + table);
    }

    /** The harness log stays: the logging of this JVM already writes to it. */
    private static void deleteLastRun() {
        if (!Files.isDirectory(ROOT)) {
            return;
        }
        try (var old = Files.walk(ROOT)) {
            old.sorted(Comparator.reverseOrder()).filter(p -> !p.equals(ROOT)
                    && !p.getFileName().toString().equals("harness.log")).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
