package dev.locker.cli;

import dev.locker.api.ForcedRelease;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.Locker;

import java.time.Instant;
import java.util.Map;
import java.util.Optional;

/**
 * {@code locker release NAME --force --reason TEXT [--token N | --holder RID]}:
 * {@link Locker#forceRelease(KeyColumn, String)}, which records who, when, why and from whom before it removes the
 * claims; with {@code --token} (or {@code --holder}, which reads the holder's token) the conditional
 * {@link Locker#forceRelease(KeyColumn, String, long)}, which removes only the claim the operator named, so a lock that
 * changed hands since {@code locker show} is left with its new holder. Refused before any I/O without both flags.
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
        String token = args.value("--token");
        Long expected = token == null ? null : Numbers.positive(token, "--token", args.command);
        String rid = args.value("--holder");
        if (rid != null && rid.isBlank()) {
            throw new UsageException("--holder needs the holder's rid, as 'locker show' prints it", args.command);
        }
        boolean conditional = expected != null || rid != null;
        boolean removed;
        String refusal = null;
        Optional<LockInfo> before = Optional.empty();
        Optional<LockInfo> now = Optional.empty();
        Optional<ForcedRelease> record;
        try (Locker locker = cli.open(uri);
             StatusLine s = new StatusLine(cli.terminal(), "releasing " + Show.lock(lock))) {
            if (rid != null) {
                before = locker.holding(lock);
                refusal = refusal(before, rid, expected);
            }
            if (refusal != null) {
                removed = false;
            } else if (conditional) {
                long t = expected != null ? expected : before.orElseThrow().fencingToken();
                expected = t;
                removed = locker.forceRelease(lock, reason, t);
                if (!removed) {
                    now = locker.holding(lock);
                }
            } else {
                removed = locker.forceRelease(lock, reason);
            }
            record = locker.lastForcedRelease(lock);
        }
        if (conditional && !removed) {
            LockInfo holder = refusal != null ? before.orElse(null) : now.orElse(null);
            String why = refusal != null ? refusal : "its holder is not the claim with token " + expected;
            if (args.flag("--json")) {
                Map<String, Object> doc = Show.lockJson(lock);
                doc.put("released", false);
                doc.put("expectedToken", expected);
                doc.put("why", why);
                doc.put("holder", holder == null ? null : Show.ownerJson(holder.holder()));
                doc.put("token", holder == null ? null : holder.fencingToken());
                cli.terminal().json(doc);
                return Cli.NO;
            }
            cli.terminal().out("not released: " + why + "; " + (holder == null ? Show.lock(lock) + " is free"
                    : Show.lock(lock) + " is held by " + Show.owner(holder.holder()) + " with token "
                    + holder.fencingToken()) + " (no claim removed)");
            return Cli.NO;
        }
        if (args.flag("--json")) {
            Map<String, Object> doc = Show.lockJson(lock);
            doc.put("released", removed);
            if (conditional) {
                doc.put("expectedToken", expected);
            }
            doc.put("record", Show.forcedJson(record.orElse(null)));
            cli.terminal().json(doc);
            return removed ? Cli.OK : Cli.NO;
        }
        Instant at = Instant.now();
        if (removed) {
            cli.terminal().out("released " + Show.lock(lock) + record.flatMap(ForcedRelease::released)
                    .map(r -> ", held by " + Show.owner(r)).orElse("")
                    + (conditional ? " with token " + expected : ""));
        } else {
            cli.terminal().out("nothing to release: no claim on " + Show.lock(lock) + " (the reason was recorded)");
        }
        record.ifPresent(r -> cli.terminal().out("recorded  " + Show.instant(r.at(), at) + " by " + Show.owner(r.by())
                + ": \"" + Show.why(r.reason(), MAX_REASON) + "\""));
        return removed ? Cli.OK : Cli.NO;
    }

    /** Why {@code --holder rid} (and {@code --token}, if given) does not name the holder read; null when it does. */
    private static String refusal(Optional<LockInfo> holding, String rid, Long expected) {
        if (holding.isEmpty()) {
            return "nobody holds it, not " + Show.clean(rid);
        }
        LockInfo h = holding.get();
        if (!h.holder().rid().equals(rid)) {
            return "its holder is " + Show.clean(h.holder().rid()) + ", not " + Show.clean(rid);
        }
        if (h.fencingToken() < 1) {
            return "its holder's claim is not confirmed yet (no token): try again";
        }
        if (expected != null && h.fencingToken() != expected) {
            return "its holder " + Show.clean(rid) + " holds it with token " + h.fencingToken() + ", not " + expected;
        }
        return null;
    }
}
