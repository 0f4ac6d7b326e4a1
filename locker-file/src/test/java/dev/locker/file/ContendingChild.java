package dev.locker.file;

import dev.locker.api.Acquisition;
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
 * A separate JVM that contends for file: locks: {@code MODE DIR EXPIRY_S [LOCK...]}, a locker with that expiry.
 * <ul>
 *   <li>{@code hold}: takes LOCK (kept alive), prints {@code HELD <token> <rid>}, then answers {@code valid} on stdin
 *       with {@code VALID <lease.isValid()>} until stdin ends.</li>
 *   <li>{@code hold-all}: takes every LOCK, prints {@code HELD}, then waits for ever.</li>
 *   <li>{@code take}: one attempt at LOCK; prints {@code TOOK <token>} or {@code BUSY <message>}, exits.</li>
 *   <li>{@code churn}: takes and releases LOCK for ever, printing {@code TOKEN <t>} after every grant, before the
 *       release (a process to stop or kill at any point of a lock operation).</li>
 *   <li>{@code taker}: opens its locker, prints {@code READY}, then for each stdin line {@code LOCK WAIT_S} tries LOCK
 *       for up to WAIT_S seconds and prints {@code TOOK <token>} (released at once) or {@code BUSY <why>}: a
 *       contender whose locker was open before whatever the test does next.</li>
 * </ul>
 */
public final class ContendingChild {

    private ContendingChild() {
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        Path dir = Path.of(args[1]);
        Duration expiry = Duration.ofSeconds(Long.parseLong(args[2]));
        try (Locker locker = FileLocker.builder(dir)
                .config(LockerConfig.builder().rid(mode).expiry(expiry).build()).build()) {
            switch (mode) {
                case "hold": {
                    try (Lease lease = locker.acquire(KeyColumn.named(args[3]), "held by a contending child")) {
                        say("HELD " + lease.fencingToken() + " " + locker.rid());
                        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                        for (String line; (line = in.readLine()) != null; ) {
                            if (line.equals("valid")) {
                                say("VALID " + lease.isValid());
                            }
                        }
                    }
                    break;
                }
                case "hold-all": {
                    for (int i = 3; i < args.length; i++) {
                        locker.acquire(KeyColumn.named(args[i]), "held by a contending child");
                    }
                    say("HELD");
                    Thread.sleep(Long.MAX_VALUE);
                    break;
                }
                case "take": {
                    try (Lease lease = locker.acquire(KeyColumn.named(args[3]), "taken by a contending child")) {
                        say("TOOK " + lease.fencingToken());
                    } catch (LockingException e) {
                        say("BUSY " + e.getMessage().replace('\n', ' '));
                    }
                    break;
                }
                case "churn": {
                    KeyColumn lock = KeyColumn.named(args[3]);
                    say("CHURNING");
                    while (true) {
                        try (Lease lease = locker.acquire(lock, "churn")) {
                            say("TOKEN " + lease.fencingToken());
                        } catch (LockingException e) {
                            // busy meanwhile: try again
                        }
                    }
                }
                case "taker": {
                    say("READY");
                    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                    for (String line; (line = in.readLine()) != null; ) {
                        String[] w = line.split(" ");
                        Acquisition a = locker.acquireWithin(KeyColumn.named(w[0]), "taker",
                                Duration.ofSeconds(Long.parseLong(w[1])));
                        if (a.acquired()) {
                            Lease l = a.lease().orElseThrow();
                            say("TOOK " + l.fencingToken());
                            l.close();
                        } else {
                            say("BUSY " + a.outcome() + " after " + a.waited().toMillis() + " ms: "
                                    + a.failure().map(e -> e.getMessage().replace('\n', ' ')).orElse(""));
                        }
                    }
                    break;
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
