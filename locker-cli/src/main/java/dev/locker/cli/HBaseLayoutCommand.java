package dev.locker.cli;

import dev.locker.hbase.HBaseLayout;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * {@code locker hbase-layout [--finalize]}: prints which free value a release writes in the {@code hbase://} lock
 * table, and with {@code --finalize} switches the table to {@link HBaseLayout#CURRENT}. Switch only once every locker
 * of the table runs this build: earlier builds cannot read the value the current layout's release writes.
 */
final class HBaseLayoutCommand {

    private final Cli cli;
    private final Args args;

    HBaseLayoutCommand(Cli cli, Args args) {
        this.cli = cli;
        this.args = args;
    }

    int run(String uri) {
        if (!Cli.scheme(uri).equals("hbase")) {
            throw new UsageException("hbase-layout works on hbase:// lock tables; this URI is "
                    + Cli.scheme(uri) + ":", args.command);
        }
        boolean finalize = args.flag("--finalize");
        HBaseLayout.State before;
        try (StatusLine s = new StatusLine(cli.terminal(), (finalize ? "switching " : "reading ")
                + Secrets.mask(uri))) {
            before = finalize ? HBaseLayout.finalizeLayout(uri) : HBaseLayout.read(uri);
        }
        boolean switched = finalize && !before.isCurrent();
        if (args.flag("--json")) {
            Map<String, Object> doc = new LinkedHashMap<>();
            doc.put("uri", Secrets.mask(uri));
            doc.put("table", before.table());
            doc.put("layout", finalize ? HBaseLayout.CURRENT : before.layout());
            doc.put("current", finalize || before.isCurrent());
            doc.put("switched", switched);
            if (switched) {
                doc.put("before", before.layout());
            }
            cli.terminal().json(doc);
            return Cli.OK;
        }
        Terminal t = cli.terminal();
        String table = "table " + before.table() + " (" + Secrets.mask(uri) + ")";
        if (switched) {
            t.out(table + ": switched from layout " + before.layout() + " to " + HBaseLayout.CURRENT + ".");
            t.out("Lockers open now keep layout " + before.layout() + " until they open the table again; both "
                    + "layouts share the table safely.");
        } else if (!before.known()) {
            t.out(table + ": layout " + before.layout() + ", " + before.description() + ".");
            t.out("A newer build set it: use that build's locker command, and upgrade every locker of the table.");
        } else if (before.isCurrent()) {
            t.out(table + ": layout " + before.layout() + ", " + before.description() + (finalize
                    ? "; nothing to switch." : "."));
        } else {
            t.out(table + ": layout " + before.layout() + ", " + before.description() + ".");
            t.out("Once every locker of the table runs this build: locker hbase-layout --finalize");
        }
        return Cli.OK;
    }
}
