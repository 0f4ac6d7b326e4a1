package dev.locker.file;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.RandomAccessFile;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * A separate JVM that keeps one lock's byte range in its stripe file, as another process in the middle of a change of
 * that lock does: {@code args[0]} the lock directory, {@code args[1]} the lock file's name. It says LOCKED, then lets
 * go when a line arrives on its standard input.
 */
public final class RangeHolder {

    private RangeHolder() {
    }

    public static void main(String[] args) throws Exception {
        String name = args[1];
        Path stripe = Path.of(args[0], ".stripes", String.format("%02x", LockDirectory.stripeOf(name)));
        try (RandomAccessFile raf = new RandomAccessFile(stripe.toFile(), "rw");
             FileLock range = raf.getChannel().lock(LockDirectory.positionOf(name), 1, false)) {
            System.out.println("LOCKED");
            System.out.flush();
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        }
    }
}
