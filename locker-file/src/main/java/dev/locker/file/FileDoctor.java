package dev.locker.file;

import dev.locker.spi.DeploymentCheck;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The checks of a {@code file:} lock directory, for {@code locker doctor}: that it is (or can become) a writable
 * directory on a file system known to be local (or one the URI trusts: {@code trustFileSystem=true}), and which clock
 * judges its claims. It only reads: it creates nothing. A path it
 * can neither find nor find missing (a parent this user may not search) is "could not check" (WARN), never "the first
 * locker creates it".
 */
public final class FileDoctor implements DeploymentCheck {

    /** For {@link java.util.ServiceLoader}. */
    public FileDoctor() {
    }

    @Override
    public Set<String> schemes() {
        return Set.of("file");
    }

    @Override
    public List<Finding> check(String uri, Consumer<String> progress) {
        int q = uri.indexOf('?');
        Path dir = FileLockerProvider.directoryOf(q < 0 ? uri : uri.substring(0, q)).toAbsolutePath();
        List<Finding> out = new ArrayList<>();
        progress.accept("the lock directory");
        Path existing = dir;
        while (existing != null && Files.notExists(existing)) { // surely absent, not merely unreadable
            existing = existing.getParent();
        }
        if (existing == null) {
            out.add(Finding.fail("directory", dir + " does not exist and no parent of it does",
                    "point the URI at a directory on a local disk"));
            return out;
        }
        // neither there nor surely absent: a file stands where a directory of the path should be, or this user may
        // not look (a parent it cannot search), which says nothing of whether the directory exists or can be written
        boolean unknown = !Files.exists(existing);
        Path blocking = unknown ? fileInPath(existing) : null;
        if (blocking != null) {
            out.add(Finding.fail("directory", blocking + " is a file, not a directory: " + dir + " cannot be created",
                    "point the URI at a directory"));
            return out;
        }
        if (unknown) {
            out.add(Finding.warn("directory", "could not check " + dir + ": " + whyUnreadable(existing),
                    "run the doctor as the user the applications run as, or check the directory by hand"));
        } else if (!existing.equals(dir)) {
            out.add(Files.isWritable(existing)
                    ? Finding.ok("directory", dir + " does not exist yet; the first locker creates it (under " + existing + ")")
                    : Finding.fail("directory", dir + " does not exist and " + existing + " is not writable by this user",
                            "create " + dir + " for the user the applications run as"));
        } else if (!Files.isDirectory(dir)) {
            out.add(Finding.fail("directory", dir + " is not a directory", "point the URI at a directory"));
            return out;
        } else if (!Files.isWritable(dir) || !Files.isReadable(dir)) {
            out.add(Finding.fail("directory", dir + " is not readable and writable by this user: no lock can be taken",
                    "give the applications' user read and write access to " + dir));
        } else {
            out.add(Finding.ok("directory", dir + " is a writable directory" + contents(dir)));
        }
        progress.accept("the file system");
        try {
            if (unknown) {
                throw new IOException("this user may not look at it");
            }
            String type = LocalFileSystems.typeOf(existing.toRealPath());
            LocalFileSystems.Kind kind = LocalFileSystems.classify(type);
            boolean trusted = kind == LocalFileSystems.Kind.UNKNOWN && FileLockerProvider.trustsFileSystem(uri);
            out.add(kind == LocalFileSystems.Kind.SHARED
                    ? Finding.fail("file-system", "'" + type + "', shared between hosts: across hosts OS file locks do "
                            + "not exclude each other, and each host takes the others' claims for an earlier boot's "
                            + "(lockers refuse to open)",
                            "use a directory on a local disk, or redis://, mongodb:// or hbase:// for processes on several hosts")
                    : trusted
                    ? Finding.warn("file-system", "'" + type + "' is not known to be local to this host; accepted "
                            + "because the URI says trustFileSystem=true. A process of another host on it would make a "
                            + "second holder of a lock", "make sure only processes of this host use " + dir)
                    : kind == LocalFileSystems.Kind.UNKNOWN
                    ? Finding.fail("file-system", "'" + type + "' is not known to be local to this host (ext4, xfs, "
                            + "btrfs, tmpfs, zfs, overlay and the like are); lockers refuse to open there",
                            "use a directory on a local disk; if only processes of this host use this one and its OS "
                            + "locks work between them, add ?trustFileSystem=true")
                    : IN_MEMORY.contains(type)
                    ? Finding.warn("file-system", "'" + type + "', in memory: the records (runOnce, forced releases) and "
                            + "the tokens' high-water marks are gone at the next boot: a job that ran once runs again, and "
                            + "the next tokens rest on the wall clock alone", "use a directory on a disk, e.g. under /var/lib")
                    : Finding.ok("file-system", "'" + type + "', local: OS file locks decide between the processes of this host"));
            if (dir.toAbsolutePath().normalize().startsWith("/tmp") || dir.toAbsolutePath().normalize().startsWith("/var/tmp")) {
                out.add(Finding.warn("location", dir + " is a temporary directory: cleaners (systemd-tmpfiles, tmpreaper) "
                        + "delete files left untouched for days there, records among them (session files are touched, "
                        + "records are not), and a job that ran once would run again", "use a directory under /var/lib"));
            }
        } catch (IOException e) {
            out.add(Finding.warn("file-system", "the file system of " + existing + " cannot be read: " + e.getMessage(),
                    "check that the directory is on a local disk"));
        }
        progress.accept("the clock");
        out.add(clockFinding(dev.locker.api.TimeSource.system()));
        return out;
    }

    /** File system types that keep their files in memory only. */
    private static final java.util.Set<String> IN_MEMORY = java.util.Set.of("tmpfs", "ramfs");

    /** Which clock judges claims here, and whether this process reads it shifted (a time namespace). */
    static Finding clockFinding(dev.locker.api.TimeSource time) {
        HostClock clock;
        try {
            clock = new HostClock(time, true);
        } catch (IllegalStateException e) {
            return Finding.fail("clock", e.getMessage(), "run the applications outside a time namespace, or let them "
                    + "read /proc/self/timens_offsets");
        }
        if (!clock.domain().startsWith("boot:")) {
            return Finding.warn("clock", "no boot id (not Linux?): only the wall clock can judge claims here, so lockers "
                    + "refuse to open unless told wallClock=true, and then a forward step of the clock ends claims early "
                    + "(two holders of one lock)", "use Linux, or add ?wallClock=true and keep the clock slewed (NTP), never stepped");
        }
        long offset = clock.offsetNanos();
        return Finding.ok("clock", "claims expire on this host's monotonic clock (CLOCK_MONOTONIC), which wall-clock "
                + "steps do not move; a claim from an earlier boot (another boot id) is dead"
                + (offset == 0 ? "" : "; this process is in a time namespace whose monotonic clock reads "
                        + java.time.Duration.ofNanos(offset) + " off the host's: claims are kept in the host's terms"));
    }

    /** The nearest ancestor of {@code p} that exists and is not a directory, or null. */
    private static Path fileInPath(Path p) {
        for (Path a = p.getParent(); a != null; a = a.getParent()) {
            if (Files.exists(a)) {
                return Files.isDirectory(a) ? null : a;
            }
        }
        return null;
    }

    /** The operating system's answer when {@code p} can be neither found nor found missing. */
    private static String whyUnreadable(Path p) {
        try {
            Files.readAttributes(p, java.nio.file.attribute.BasicFileAttributes.class);
            return "this user may not look at " + p;
        } catch (IOException e) {
            return "this user may not look at " + p + " (" + e.getMessage() + ")";
        }
    }

    private static String contents(Path dir) {
        int locks = 0;
        int sessions = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path f : files) {
                if (!f.getFileName().toString().startsWith(".")) {
                    locks++;
                }
            }
        } catch (IOException | RuntimeException e) {
            return "";
        }
        Path s = dir.resolve(".sessions");
        if (Files.isDirectory(s)) {
            try (DirectoryStream<Path> files = Files.newDirectoryStream(s)) {
                for (Path ignored : files) {
                    sessions++;
                }
            } catch (IOException | RuntimeException e) {
                return "";
            }
        }
        return " (" + locks + " lock file" + (locks == 1 ? "" : "s") + ", " + sessions + " session file"
                + (sessions == 1 ? "" : "s") + ")";
    }
}
