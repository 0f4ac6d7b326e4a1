package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

/**
 * A separate JVM for {@link FileReviewTest}.
 * <ul>
 *   <li>{@code hold DIR LOCK}: takes LOCK (60 s expiry, kept alive), prints {@code HELD <token> <rid>}, then answers
 *       {@code valid} on stdin with {@code VALID <lease.isValid()>} until stdin ends.</li>
 *   <li>{@code take DIR LOCK}: one attempt at LOCK; prints {@code TOOK <token>} or {@code BUSY <message>}, exits.</li>
 *   <li>{@code churn DIR LOCK}: takes and releases LOCK in a loop for ever (a process that may be stopped inside a
 *       lock operation).</li>
 * </ul>
 */
public final class ReviewChild {

    private ReviewChild() {
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        Path dir = Path.of(args[1]);
        KeyColumn lock = KeyColumn.named(args[2]);
        try (Locker locker = FileLocker.builder(dir)
                .config(LockerConfig.builder().rid(mode).expiry(Duration.ofSeconds(60)).build()).build()) {
            switch (mode) {
                case "hold":
                    try (Lease lease = locker.acquire(lock, "held by a review child")) {
                        say("HELD " + lease.fencingToken() + " " + locker.rid());
                        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                        for (String line; (line = in.readLine()) != null; ) {
                            if (line.equals("valid")) {
                                say("VALID " + lease.isValid());
                            }
                        }
                    }
                    break;
                case "take":
                    try (Lease lease = locker.acquire(lock, "taken by a review child")) {
                        say("TOOK " + lease.fencingToken());
                    } catch (LockingException e) {
                        say("BUSY " + e.getMessage().replace('\n', ' '));
                    }
                    break;
                case "churn":
                    say("CHURNING");
                    while (true) {
                        try (Lease lease = locker.acquire(lock, "churn")) {
                            lease.fencingToken();
                        } catch (LockingException e) {
                            // a stripe busy meanwhile: try again
                        }
                    }
                default:
                    throw new IllegalArgumentException(mode);
            }
        }
        System.exit(0);
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
