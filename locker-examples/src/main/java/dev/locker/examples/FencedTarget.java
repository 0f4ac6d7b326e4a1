package dev.locker.examples;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * The resource the demo's migration writes to, shared by the worker processes: a log file that accepts a write only
 * when its fencing token is not below the highest token it has accepted. Each write is checked and appended under an
 * OS lock on the file, so the check holds between processes. A holder that paused past its lease comes back with a
 * token lower than its successor's: refused.
 */
final class FencedTarget {

    private final Path file;

    FencedTarget(Path file) {
        this.file = file;
    }

    /** Appends {@code line} written under {@code token}; returns 0 when accepted, else the higher token seen. */
    long write(long token, String writer, String line) {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE); FileLock ignored = ch.lock()) {
            long highest = highest();
            if (token < highest) {
                return highest;
            }
            ch.position(ch.size());
            ch.write(ByteBuffer.wrap((token + " " + writer + " " + line + "\n").getBytes(StandardCharsets.UTF_8)));
            ch.force(false);
            return 0;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The accepted writes, in order: "token writer text". */
    List<String> lines() {
        try {
            return Files.exists(file) ? Files.readAllLines(file) : List.of();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private long highest() {
        return lines().stream().mapToLong(l -> Long.parseLong(l.substring(0, l.indexOf(' ')))).max().orElse(0);
    }
}
