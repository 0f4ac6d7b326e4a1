package dev.locker.cli;

import dev.locker.api.LockInfo;
import dev.locker.api.LockPage;
import dev.locker.api.Locker;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code locker list [PREFIX] [--limit N]}: the held locks under a key prefix, page by page. Each page is printed as
 * it arrives (text rows, or the elements of the JSON array), so memory holds one page whatever the limit; without
 * {@code --limit} the listing stops at {@link #DEFAULT_LIMIT} locks and says it was cut short, so a deployment with a
 * million locks is not read whole by a command typed to look at a few.
 */
final class ListCommand {

    /** How many locks a listing without {@code --limit} shows at most. */
    static final long DEFAULT_LIMIT = 1000;

    private static final int PAGE = Locker.MAX_LIST_LIMIT;
    private static final String[] HEADER = {"LOCK", "HOLDER", "HOST", "PID", "WHY", "SINCE", "EXPIRES", "TOKEN"};

    private final Cli cli;
    private final Args args;
    private final boolean json;
    /** Text: the column widths so far (they only grow, page by page). */
    private final int[] width = new int[HEADER.length];
    /** JSON: the last element, held back until it is known whether another follows (its comma). */
    private String pending;

    ListCommand(Cli cli, Args args) {
        this.cli = cli;
        this.args = args;
        this.json = args.flag("--json");
    }

    int run(String uri) {
        String prefixArg = args.positional(0);
        byte[] prefix = prefixArg == null ? new byte[0] : LockNames.parse(prefixArg, "PREFIX");
        boolean defaulted = args.value("--limit") == null;
        long limit = defaulted ? DEFAULT_LIMIT : Numbers.positive(args.value("--limit"), "--limit", args.command);
        String under = prefix.length == 0 ? "" : " under '" + LockNames.format(prefix) + "'";
        long count = 0;
        boolean truncated;
        boolean interrupted = false;
        try (Locker locker = cli.open(uri)) {
            String cursor = null;
            int pages = 0;
            do {
                int want = (int) Math.min(PAGE, limit - count);
                LockPage page;
                try (StatusLine status = new StatusLine(cli.terminal(), "listing locks")) {
                    status.update(count + " found, " + pages + " calls");
                    page = locker.list(prefix, want, cursor);
                }
                pages++;
                print(page.locks(), count == 0);
                count += page.locks().size();
                cursor = page.nextCursor().orElse(null);
                if (cli.stopped()) {
                    interrupted = true;
                    break;
                }
            } while (cursor != null && count < limit);
            truncated = cursor != null;
        }
        if (json) {
            cli.terminal().write((pending == null ? "" : pending) + "],\"count\":" + count + ",\"truncated\":"
                    + truncated + ",\"limit\":" + limit + "}");
            cli.terminal().out("");
        } else if (count == 0 && !truncated) {
            cli.terminal().out("no locks held" + under);
        } else {
            String more = !truncated ? "" : interrupted ? " (interrupted; more may be held)"
                    : defaulted ? " (stopped at the default limit of " + DEFAULT_LIMIT + "; more may be held: "
                    + "--limit N lists up to N)" : " (stopped at --limit " + limit + "; more may be held)";
            cli.terminal().out(count + (count == 1 ? " lock" : " locks") + " held" + under + more);
        }
        return interrupted ? cli.interruptedCode() : Cli.OK;
    }

    /** One page, as it arrived: JSON array elements, or table rows (with the header before the first). */
    private void print(List<LockInfo> page, boolean first) {
        if (json) {
            if (first) {
                cli.terminal().write("{\"locks\":[");
            }
            StringBuilder sb = new StringBuilder();
            for (LockInfo i : page) {
                if (pending != null) {
                    sb.append(pending).append(',');
                }
                pending = Json.write(Show.infoJson(i));
            }
            cli.terminal().write(sb.toString());
            return;
        }
        if (page.isEmpty()) {
            return;
        }
        Instant now = Instant.now();
        List<String[]> rows = new ArrayList<>();
        if (first) {
            rows.add(HEADER);
        }
        for (LockInfo i : page) {
            rows.add(new String[] {Show.lock(i.lock()), Show.clean(i.holder().rid()), Show.clean(i.holder().host()),
                    i.holder().pid() > 0 ? Long.toString(i.holder().pid()) : "-",
                    i.holder().why().isEmpty() ? "-" : Show.why(i.holder().why(), 40),
                    Show.instant(i.holder().since(), now), Show.instant(i.expiresAt(), now),
                    Long.toString(i.fencingToken())});
        }
        table(rows);
    }

    /** Rows aligned to the widths seen so far: a later, wider page widens its own rows, never the printed ones. */
    private void table(List<String[]> rows) {
        for (String[] r : rows) {
            for (int c = 0; c < r.length; c++) {
                width[c] = Math.max(width[c], r[c].codePointCount(0, r[c].length()));
            }
        }
        for (String[] r : rows) {
            StringBuilder sb = new StringBuilder();
            for (int c = 0; c < r.length; c++) {
                sb.append(r[c]);
                if (c < r.length - 1) {
                    sb.append(" ".repeat(width[c] - r[c].codePointCount(0, r[c].length()) + 2));
                }
            }
            cli.terminal().out(sb.toString().stripTrailing());
        }
    }
}
