package dev.locker.cli;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockOwner;
import dev.locker.api.Locker;
import dev.locker.api.LockingException;
import dev.locker.api.TemporaryLockingException;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.Optional;

/**
 * {@code locker watch NAME}: asks {@link Locker#holder} every {@code --interval} (default 500 ms) and prints a line
 * whenever the answer changes: a holder (a new claim, even by the same process), free, or unreachable (a
 * {@link TemporaryLockingException}: the watch goes on). Ctrl-C, {@code --until-free} or {@code --count} end it with
 * exit code 0; a refusal (a {@link dev.locker.api.PermanentLockingException}: credentials, ACL rights), which asking
 * again cannot cure, ends it with {@link Cli#REFUSED}, as every other command.
 */
final class WatchCommand {

    static final Duration DEFAULT_INTERVAL = Duration.ofMillis(500);
    private static final Duration MIN_INTERVAL = Duration.ofMillis(50);
    private static final Duration MAX_INTERVAL = Duration.ofMinutes(60);

    private final Cli cli;
    private final Args args;

    WatchCommand(Cli cli, Args args) {
        this.cli = cli;
        this.args = args;
    }

    /** One observation: the holder, or free, or the backend's failure. */
    private record State(LockOwner holder, String error) {
    }

    int run(String uri) {
        KeyColumn lock = Cli.lock(args);
        Duration interval = args.value("--interval") == null ? DEFAULT_INTERVAL
                : Numbers.duration(args.value("--interval"), "--interval", args.command);
        if (interval.compareTo(MIN_INTERVAL) < 0 || interval.compareTo(MAX_INTERVAL) > 0) {
            throw new UsageException("--interval must be at least " + MIN_INTERVAL.toMillis() + "ms and at most "
                    + MAX_INTERVAL.toMinutes() + "m, was '" + args.value("--interval") + "'", args.command);
        }
        long count = args.value("--count") == null ? Long.MAX_VALUE
                : Numbers.positive(args.value("--count"), "--count", args.command);
        boolean untilFree = args.flag("--until-free");
        try (Locker locker = cli.open(uri)) {
            if (!args.flag("--json")) {
                cli.terminal().err("locker: watching " + Show.lock(lock) + " every " + Show.duration(interval)
                        + "; Ctrl-C ends");
            }
            State last = null;
            long printed = 0;
            while (!cli.stopped()) {
                State now;
                try {
                    Optional<LockOwner> h = locker.holder(lock);
                    now = new State(h.orElse(null), null);
                } catch (LockingException e) {
                    if (cli.stopped()) {
                        break;
                    }
                    if (!(e instanceof TemporaryLockingException)) {
                        throw e; // refused: asking again will not help (Cli exits 4)
                    }
                    now = new State(null, e.getMessage() == null ? e.toString() : e.getMessage());
                }
                if (!now.equals(last)) {
                    print(lock, now);
                    last = now;
                    printed++;
                    if (printed >= count || untilFree && now.error() == null && now.holder() == null) {
                        return Cli.OK;
                    }
                }
                try {
                    Thread.sleep(interval.toMillis());
                } catch (InterruptedException e) {
                    break;
                }
            }
        }
        return Cli.OK;
    }

    private void print(KeyColumn lock, State s) {
        Instant at = Instant.now().truncatedTo(ChronoUnit.MILLIS);
        if (args.flag("--json")) {
            Map<String, Object> doc = new java.util.LinkedHashMap<>();
            doc.put("at", at.toString());
            doc.putAll(Show.lockJson(lock));
            if (s.error() != null) {
                doc.put("error", s.error());
            } else {
                doc.put("held", s.holder() != null);
                doc.put("holder", Show.ownerJson(s.holder()));
            }
            cli.terminal().json(doc);
            return;
        }
        String what;
        if (s.error() != null) {
            what = "unreachable: " + s.error();
        } else if (s.holder() == null) {
            what = "free";
        } else {
            LockOwner o = s.holder();
            what = "held by " + Show.owner(o) + (o.why().isEmpty() ? "" : " why \"" + Show.why(o.why(), 200) + "\"")
                    + (o.since() == null ? "" : " since " + o.since().truncatedTo(ChronoUnit.SECONDS));
        }
        cli.terminal().out(at + "  " + Show.lock(lock) + "  " + what);
    }
}
