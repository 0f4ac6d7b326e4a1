package dev.locker.cli;

import dev.locker.api.ForcedRelease;
import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;

import java.time.Instant;
import java.util.Map;
import java.util.Optional;

/**
 * {@code locker release NAME --force --reason TEXT}: {@link Locker#forceRelease(KeyColumn, String)}, which records
 * who, when, why and from whom before it removes the claims. Refused before any I/O without both flags.
 */
final class ReleaseCommand {

    /** The longest reason the locker records. */
    static final int MAX_REASON = 1000;

    private final Cli cli;
    private final Args args;

    ReleaseCommand(Cli cli, Args args) {
        this.cli = cli;
        this.args = args;
    }

    int run(String uri) {
        KeyColumn lock = Cli.lock(args);
        if (!args.flag("--force")) {
            throw new UsageException("release removes another process's claim on " + Show.lock(lock) + ": add "
                    + "--force to confirm, and --reason TEXT (recorded, shown to the former holder and by show)",
                    args.command);
        }
        String reason = args.value("--reason");
        if (reason == null || reason.isBlank()) {
            throw new UsageException("say why with --reason TEXT: it is recorded with who and when, and the former "
                    + "holder's lost signal and 'locker show' print it", args.command);
        }
        if (reason.length() > MAX_REASON) {
            throw new UsageException("--reason is " + reason.length() + " characters; at most " + MAX_REASON,
                    args.command);
        }
        boolean removed;
        Optional<ForcedRelease> record;
        try (Locker locker = cli.open(uri); StatusLine s = new StatusLine(cli.terminal(), "releasing " + Show.lock(lock))) {
            removed = locker.forceRelease(lock, reason);
            record = locker.lastForcedRelease(lock);
        }
        if (args.flag("--json")) {
            Map<String, Object> doc = Show.lockJson(lock);
            doc.put("released", removed);
            doc.put("record", Show.forcedJson(record.orElse(null)));
            cli.terminal().json(doc);
            return removed ? Cli.OK : Cli.NO;
        }
        Instant now = Instant.now();
        if (removed) {
            cli.terminal().out("released " + Show.lock(lock) + record.flatMap(ForcedRelease::released)
                    .map(r -> ", held by " + Show.owner(r)).orElse(""));
        } else {
            cli.terminal().out("nothing to release: no claim on " + Show.lock(lock) + " (the reason was recorded)");
        }
        record.ifPresent(r -> cli.terminal().out("recorded  " + Show.instant(r.at(), now) + " by " + Show.owner(r.by())
                + ": \"" + Show.why(r.reason(), MAX_REASON) + "\""));
        return removed ? Cli.OK : Cli.NO;
    }
}
