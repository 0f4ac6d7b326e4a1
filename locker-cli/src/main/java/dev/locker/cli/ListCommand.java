package dev.locker.cli;

import dev.locker.api.LockInfo;
import dev.locker.api.LockPage;
import dev.locker.api.Locker;

import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** {@code locker list [PREFIX] [--limit N]}: the held locks under a key prefix, page by page. */
final class ListCommand {

    private static final int PAGE = Locker.MAX_LIST_LIMIT;

    private final Cli cli;
    private final Args args;

    ListCommand(Cli cli, Args args) {
        this.cli = cli;
        this.args = args;
    }

    int run(String uri) {
        String prefixArg = args.positional(0);
        byte[] prefix = prefixArg == null ? new byte[0] : LockNames.parse(prefixArg, "PREFIX");
        long limit = Long.MAX_VALUE;
        if (args.value("--limit") != null) {
            limit = Numbers.positive(args.value("--limit"), "--limit", args.command);
        }
        List<LockInfo> found = new ArrayList<>();
        boolean truncated = false;
        try (Locker locker = cli.open(uri); StatusLine status = new StatusLine(cli.terminal(), "listing locks")) {
            String cursor = null;
            int pages = 0;
            do {
                int want = (int) Math.min(PAGE, limit - found.size());
                LockPage page = locker.list(prefix, want, cursor);
                pages++;
                found.addAll(page.locks());
                cursor = page.nextCursor().orElse(null);
                status.update(found.size() + " found, " + pages + " calls");
                if (cli.stopped()) {
                    return cli.interruptedCode();
                }
            } while (cursor != null && found.size() < limit);
            truncated = cursor != null;
        }
        Instant now = Instant.now();
        if (args.flag("--json")) {
            Map<String, Object> doc = new LinkedHashMap<>();
            doc.put("count", found.size());
            doc.put("truncated", truncated);
            List<Object> locks = new ArrayList<>();
            found.forEach(i -> locks.add(Show.infoJson(i)));
            doc.put("locks", locks);
            cli.terminal().json(doc);
            return Cli.OK;
        }
        String under = prefix.length == 0 ? "" : " under '" + LockNames.format(prefix) + "'";
        if (found.isEmpty()) {
            cli.terminal().out("no locks held" + under);
            return Cli.OK;
        }
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"LOCK", "HOLDER", "HOST", "PID", "WHY", "SINCE", "EXPIRES", "TOKEN"});
        for (LockInfo i : found) {
            rows.add(new String[] {Show.lock(i.lock()), Show.clean(i.holder().rid()), Show.clean(i.holder().host()),
                    i.holder().pid() > 0 ? Long.toString(i.holder().pid()) : "-",
                    i.holder().why().isEmpty() ? "-" : Show.why(i.holder().why(), 40),
                    Show.instant(i.holder().since(), now), Show.instant(i.expiresAt(), now),
                    Long.toString(i.fencingToken())});
        }
        table(rows);
        cli.terminal().out(found.size() + (found.size() == 1 ? " lock" : " locks") + " held" + under
                + (truncated ? " (stopped at --limit " + limit + "; more are held)" : ""));
        return Cli.OK;
    }

    private void table(List<String[]> rows) {
        int[] width = new int[rows.get(0).length];
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
