package dev.locker.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The embedded {@code file:DIR} backend (locker-file): no server, the workers share a lock directory on this host. A
 * fresh directory per run. What has a server (a connection to freeze, a server to kill, restart or pause, the restart
 * guard's control, a region server) does not apply; a killed holder's session lock is released by the kernel, so the
 * takeover after SIGKILL is expected at once, not after the expiry.
 */
public final class FileBackend implements Backend {

    private final Path dir;
    private Duration expiry;
    private Path locks;
    private int run;

    /**
     * A backend whose lock directories live under {@code dir}.
     *
     * @param dir a directory for the runs' lock directories
     */
    public FileBackend(Path dir) {
        this.dir = dir;
    }

    @Override
    public String name() {
        return "file";
    }

    @Override
    public String inapplicable(Scenario s) {
        return switch (s) {
            case FREEZE_CONNECTION -> "no connection: the workers share a directory";
            case SERVER_RESTART, SERVER_RESTART_AOF, SERVER_PAUSE -> "no server";
            case REGION_SERVER_ABORT -> "HBase only";
            case CONTROL_NO_GUARD -> "Redis only (the restart guard)";
            default -> s.onlyOn(name());
        };
    }

    @Override
    public void begin(Scenario s, Duration expiry) {
        this.expiry = expiry;
        try {
            locks = Files.createDirectories(dir.resolve("file-locks-" + s.name().toLowerCase() + "-" + (++run)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public String uri(String hostPort) {
        return "file:" + locks + "?expiry=" + expiry.toMillis() + "ms";
    }

    @Override
    public String serverAddress() {
        return null;
    }

    @Override
    public void end() {
        // the directory stays, with the run's other files, for a look after a failure
    }

    @Override
    public void close() {
    }
}
