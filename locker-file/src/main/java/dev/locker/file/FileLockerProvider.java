package dev.locker.file;

import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockerProvider;
import dev.locker.api.Lockers;
import dev.locker.api.OptionSyntax;
import dev.locker.spi.UriOptions;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Set;

/**
 * The {@code file:} backend: {@code file:/var/lib/myapp/locks}, {@code file:relative/dir} (from the working
 * directory) or {@code file:///var/lib/myapp/locks}, with the common options ({@code file:/tmp/locks?expiry=30s}).
 * Percent-escapes in the path are decoded ({@code %20} is a space). The directory is created when missing; it must be
 * on a local file system, shared by processes of this host only.
 *
 * <p>Options of {@code file:} beside the common ones:
 * <ul>
 *   <li>{@code wallClock=true}: off Linux, let the wall clock judge claims ({@link FileLocker.Builder#wallClock}).</li>
 *   <li>{@code trustFileSystem=true}: accept a file system type not known to be local to this host, such as a FUSE
 *       file system used by this host alone ({@link FileLocker.Builder#trustFileSystem}). Known network types stay
 *       refused.</li>
 * </ul>
 */
public final class FileLockerProvider implements LockerProvider {

    /** The options of {@code file:} beside the common ones. */
    private static final Set<String> OPTIONS = Set.of("wallClock", "trustFileSystem");

    @Override
    public Set<String> schemes() {
        return Set.of("file");
    }

    @Override
    public Locker open(String uri, LockerConfig config) {
        Parsed p = parse(uri, config);
        return FileLocker.builder(p.dir()).wallClock(p.wallClock()).trustFileSystem(p.trustFileSystem())
                .config(p.config()).build();
    }

    @Override
    public LockerConfig check(String uri, LockerConfig config) {
        return parse(uri, config).config();
    }

    @Override
    public OptionSyntax optionSyntax() {
        return UriOptions.syntax(OPTIONS);
    }

    /**
     * A {@code file:} URI read: the directory (not touched), the clock choice, whether an unknown file system type is
     * trusted, and the effective configuration.
     */
    private record Parsed(Path dir, boolean wallClock, boolean trustFileSystem, LockerConfig config) {
    }

    /** The one parse of a {@code file:} URI, for {@link #open} and {@link #check}; no file is read or created. */
    private static Parsed parse(String uri, LockerConfig config) {
        UriOptions options = UriOptions.parse(uri).requireKnown(OPTIONS);
        Path dir = directoryOf(options.base());
        boolean wallClock = options.getBoolean("wallClock", false);
        boolean trustFileSystem = options.getBoolean("trustFileSystem", false);
        return new Parsed(dir, wallClock, trustFileSystem, options.applyTo(config));
    }

    /** Does a {@code file:} URI accept a file system type not known to be local ({@code trustFileSystem=true})? */
    static boolean trustsFileSystem(String uri) {
        try {
            return UriOptions.parse(uri).getBoolean("trustFileSystem", false);
        } catch (IllegalArgumentException unreadable) {
            return false; // the doctor reports what it can; opening such a URI fails with the parse's message
        }
    }

    /** The directory a {@code file:} URI (without its query) names. */
    static Path directoryOf(String base) {
        String path = base.substring(base.indexOf(':') + 1);
        if (path.startsWith("//")) {
            String rest = path.substring(2);
            int slash = rest.indexOf('/');
            String host = slash < 0 ? rest : rest.substring(0, slash);
            if (!host.isEmpty() && !host.equalsIgnoreCase("localhost")) {
                throw new IllegalArgumentException("file: URI '" + Lockers.redact(base) + "' names host '"
                        + UriOptions.shown(base, host) + "': file: takes a "
                        + "local directory (file:/dir, file:relative/dir or file:///dir); for processes on several "
                        + "hosts use redis://, mongodb:// or hbase://");
            }
            path = slash < 0 ? "" : rest.substring(slash);
        }
        path = percentDecoded(path, base);
        if (path.isEmpty()) {
            throw new IllegalArgumentException("file: URI '" + Lockers.redact(base) + "' names no directory: use file:/some/dir or "
                    + "file:relative/dir");
        }
        try {
            return Path.of(path);
        } catch (InvalidPathException e) {
            throw new IllegalArgumentException("file: URI '" + Lockers.redact(base) + "' is not a valid path: "
                    + e.getReason(), e);
        }
    }

    private static String percentDecoded(String s, String base) {
        if (s.indexOf('%') < 0) {
            return s;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] == '%') {
                int hi = i + 2 < bytes.length ? Character.digit(bytes[i + 1], 16) : -1;
                int lo = i + 2 < bytes.length ? Character.digit(bytes[i + 2], 16) : -1;
                if (hi < 0 || lo < 0) {
                    throw new IllegalArgumentException("file: URI '" + Lockers.redact(base) + "' has a bad percent-escape at " + i);
                }
                out.write(hi << 4 | lo);
                i += 2;
            } else {
                out.write(bytes[i]);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }
}
