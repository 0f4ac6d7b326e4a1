package dev.locker.cli;

import dev.locker.api.ForcedRelease;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.Locker;
import dev.locker.api.RunRecord;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;

/**
 * {@code locker show NAME}: the holder ({@link Locker#holder}), its token and expiry (from a listing by the lock's
 * key, the one API that returns them; given up after {@link #LISTING_BUDGET}), the last forced release and the last
 * finished run. For a free lock it says which of those records exist, and when none does, that nothing is known of the
 * name: it reads only that name's records, never a listing of the whole server.
 */
final class ShowCommand {

    /** How long show looks for the holder's token and expiry in the listing before printing them as unknown. */
    static final Duration LISTING_BUDGET = Duration.ofSeconds(30);

    private final Cli cli;
    private final Args args;

    ShowCommand(Cli cli, Args args) {
        this.cli = cli;
        this.args = args;
    }

    int run(String uri) {
        KeyColumn lock = Cli.lock(args);
        Optional<LockOwner> holder;
        Optional<LockInfo> info = Optional.empty();
        Optional<ForcedRelease> forced;
        Optional<RunRecord> run;
        try (Locker locker = cli.open(uri); StatusLine status = new StatusLine(cli.terminal(), "reading " + Show.lock(lock))) {
            holder = locker.holder(lock);
            if (holder.isPresent()) {
                status.update("looking for its token in the listing");
                info = find(locker, lock, status);
            }
            forced = locker.lastForcedRelease(lock);
            run = lastRun(locker, lock);
        }
        Instant now = Instant.now();
        if (args.flag("--json")) {
            Map<String, Object> doc = Show.lockJson(lock);
            doc.put("held", holder.isPresent());
            doc.put("holder", Show.ownerJson(holder.orElse(null)));
            doc.put("token", info.map(i -> (Object) i.fencingToken()).orElse(null));
            doc.put("expiresAt", info.map(i -> (Object) i.expiresAt().toString()).orElse(null));
            doc.put("lastForcedRelease", Show.forcedJson(forced.orElse(null)));
            doc.put("lastRun", Show.runJson(run.orElse(null)));
            cli.terminal().json(doc);
            return holder.isPresent() ? Cli.OK : Cli.NO;
        }
        Terminal t = cli.terminal();
        String asTyped = Show.lock(lock);
        // Messages and the servers spell a lock KeyColumn.legible(); shown beside the command-line form when they differ.
        String server = lock.legible();
        t.out("lock      " + asTyped + (asTyped.equals(server) ? "" : " (" + server + " in messages and on the server)"));
        if (holder.isPresent()) {
            LockOwner o = holder.get();
            t.out("held by   " + Show.owner(o));
            t.out("why       " + (o.why().isEmpty() ? "-" : Show.why(o.why(), 1000)));
            t.out("since     " + Show.instant(o.since(), now));
            t.out("token     " + info.map(i -> Long.toString(i.fencingToken())).orElse("unknown (not found in the listing)"));
            t.out("expires   " + info.map(i -> Show.instant(i.expiresAt(), now) + " on the backend's clock").orElse("unknown"));
        } else {
            t.out("held by   nobody: the lock is free");
        }
        if (forced.isPresent()) {
            ForcedRelease f = forced.get();
            t.out("forced    " + Show.instant(f.at(), now) + " by " + Show.owner(f.by())
                    + (f.reason().isEmpty() ? "" : ": \"" + Show.why(f.reason(), 1000) + "\"")
                    + f.released().map(r -> ", from " + Show.owner(r)).orElse(", when it was free")
                    + (f.releasedToken().isPresent() ? " (token " + f.releasedToken().getAsLong() + ")" : ""));
        } else {
            t.out("forced    never force-released");
        }
        if (run.isPresent()) {
            RunRecord r = run.get();
            t.out("last run  " + Show.owner(r.ranBy()) + ", started " + Show.instant(r.startedAt(), now)
                    + ", finished " + Show.instant(r.finishedAt(), now) + ", token " + r.token());
        } else if (holder.isEmpty()) {
            t.out("last run  none recorded");
        }
        if (holder.isEmpty() && forced.isEmpty() && run.isEmpty()) {
            // A job's lock often has a longer name than the job; listing by prefix finds it while it is held.
            t.out("note      nothing is known of this name: no holder, no run record, no forced release. A job's "
                    + "lock may have a longer name; `locker list PREFIX` shows the held locks whose name starts with PREFIX");
        }
        return holder.isPresent() ? Cli.OK : Cli.NO;
    }

    private Optional<LockInfo> find(Locker locker, KeyColumn lock, StatusLine status) {
        long deadline = System.nanoTime() + LISTING_BUDGET.toNanos();
        String cursor = null;
        int calls = 0;
        do {
            LockPage page = locker.list(lock.key(), Locker.MAX_LIST_LIMIT, cursor);
            calls++;
            for (LockInfo i : page.locks()) {
                if (i.lock().equals(lock)) {
                    return Optional.of(i);
                }
            }
            cursor = page.nextCursor().orElse(null);
            status.update("looking for its token in the listing (" + calls + " calls)");
        } while (cursor != null && System.nanoTime() - deadline < 0 && !cli.stopped());
        return Optional.empty();
    }

    private static Optional<RunRecord> lastRun(Locker locker, KeyColumn lock) {
        try {
            return locker.lastRun(lock);
        } catch (UnsupportedOperationException noRecords) {
            return Optional.empty();
        }
    }
}
