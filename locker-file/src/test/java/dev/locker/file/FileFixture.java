package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.LockerFixture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * FileLockers on one lock directory under {@code target/} (a local file system), as the processes of one host share
 * it. Breaking the backend moves the directory away (as an unmount would); losing a lock's claims deletes its file
 * and its records file (claim, token, records), as an operator's
 * {@code rm} would. Child JVMs on the directory ({@link ChildJvm}) are the other processes; closing stops them.
 */
final class FileFixture implements LockerFixture {

    private final Path dir;
    private final Path moved;
    private final List<ChildJvm> children = new ArrayList<>();

    FileFixture(String name) {
        try {
            Path base = Files.createDirectories(Path.of("target", "lock-dirs"));
            this.dir = Files.createTempDirectory(base, name + "-").toRealPath();
            this.moved = dir.resolveSibling(dir.getFileName() + ".moved");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    Path dir() {
        return dir;
    }

    @Override
    public Locker open(LockerConfig config) {
        return FileLocker.builder(dir).config(config).build();
    }

    /** A locker of this JVM on the directory, named {@code rid}, whose claims live for {@code expiry}. */
    Locker open(String rid, Duration expiry) {
        return open(LockerConfig.builder().rid(rid).expiry(expiry).build());
    }

    /** A child JVM on the directory running {@code mode} with a locker of {@code expirySeconds}; stopped on close. */
    ChildJvm start(String mode, int expirySeconds, String... locks) throws IOException {
        return keep(ChildJvm.start(mode, dir, expirySeconds, locks));
    }

    /** A child on this directory with a 60 s locker, under {@code prefix} (a command such as unshare). */
    ChildJvm start(String mode, KeyColumn lock, List<String> prefix) throws IOException {
        return keep(ChildJvm.start(prefix, mode, dir, 60, ChildJvm.name(lock)));
    }

    private ChildJvm keep(ChildJvm c) {
        children.add(c);
        return c;
    }

    /** Expiry is on the configured time source's monotonic clock (a virtual clock shared by the suite's lockers). */
    @Override
    public boolean expiryFollowsConfiguredClock() {
        return true;
    }

    @Override
    public boolean canBreakBackend() {
        return true;
    }

    @Override
    public void breakBackend() {
        move(dir, moved);
    }

    @Override
    public void repairBackend() {
        move(moved, dir);
    }

    private static void move(Path from, Path to) {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public boolean canLoseClaims() {
        return true;
    }

    @Override
    public void loseClaims(KeyColumn lock) {
        try {
            Files.delete(dir.resolve(FileNames.of(lock, false)));
            Files.deleteIfExists(dir.resolve(".records").resolve(FileNames.of(lock, false)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Stops the child JVMs, then deletes the directory. */
    @Override
    public void close() throws Exception {
        for (ChildJvm c : children) {
            c.close();
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
