package dev.locker.cli;

/** The {@code --help} texts: what each command does, with examples, and the exit codes. */
final class Help {

    private Help() {
    }

    private static final String OVERVIEW = """
            locker - see and fix the locks of a Locker deployment, and check the deployment itself

            Usage: locker [--uri URI] [--json] [--verbose] COMMAND [ARGS]

            Commands:
              list [PREFIX]                        held locks (holder, why, since, expiry, token), by key prefix
              show NAME                            one lock: holder, token, expiry, last forced release, last run
              release NAME --force --reason TEXT   remove a (dead) holder's claim, on the record
                [--token N] [--holder RID]         only if the holder is still the claim 'show' printed
              watch NAME                           print the lock's holder whenever it changes; Ctrl-C ends
              doctor                               check the deployment for what breaks locks (OK/WARN/FAIL)
              hbase-layout [--finalize]            an HBase lock table's layout; switch it once all lockers are new
              help [COMMAND]                       this text, or a command's with examples

            The backend: --uri URI, or the environment variable LOCKER_URI; the scheme picks it:
              redis://[user[:password]@]host:6379[/db][?prefix=locker:]     rediss:// for TLS
              mongodb://host1,host2/?replicaSet=rs0[&lockerDatabase=locker&lockerCollection=locks]
              hbase://zk1,zk2:2181/locker_locks                             (the CLI never creates the table)
            Use the URI (with its options) your applications use, so the CLI sees their locks. Passwords are never
            printed: URIs are shown as redis://user:***@host. Prefer LOCKER_URI over --uri on shared hosts (a
            command line is visible to other users in ps).

            Lock names: NAME is the lock's name as in KeyColumn.named(NAME). A three-phase lock (key + column) is
            --key K --column C (NAME --column C is the same). Any byte can be written %XX (two hex digits), a
            literal % is %25; locks are printed the same way (a space prints as %20), so output can be pasted back.

            Output: text for people; --json prints one JSON document (watch: one per line) with stable field names.
            A status line appears on stderr when a step takes longer than a second.

            Exit codes:
              0    done (doctor: no FAIL; show: the lock is held; release: a claim was removed)
              1    doctor found a FAIL; show/release: the lock is not held (release --token/--holder: not by that claim)
              2    usage error: bad option, name or URI, missing --force/--reason (nothing was done, no I/O)
              3    backend unreachable (or too slow): nothing changed that the command reports; try again
              4    backend refused: credentials, ACL rights, a missing table
              5    unexpected failure (a bug): --verbose prints the stack trace
              130  stopped by Ctrl-C (watch exits 0)

            Examples:
              export LOCKER_URI=redis://locker:secret@10.0.0.5:6379
              locker doctor
              locker list jobs/
              locker show nightly-report
              locker release nightly-report --force --reason "host db7 died at 03:12, INC-4711"
              locker watch nightly-report --until-free
              locker --json list | jq '.locks[].holder.host'

            'locker help COMMAND' shows a command's options and examples.""";

    private static final String LIST = """
            locker list [PREFIX] [--limit N]

            Lists the held locks whose name (key) starts with PREFIX (all held locks without one): the lock, its
            holder (rid, host, pid, why, since), the holder's fencing token and when its claim expires (on the
            backend's clock). Pages through Locker.list, 1000 locks per call, printing each page as it arrives;
            each call does bounded work on the backend (Redis: SCAN over the database), so a long listing shows a
            status line. Without --limit it stops at 1000 locks and says so ("more may be held"; JSON:
            "truncated":true), so a look at a few locks never reads a whole deployment.

              --limit N   stop after N locks (default: 1000)

            Examples:
              locker list                       held locks, the first 1000
              locker list --limit 1000000       up to a million, printed page by page
              locker list jobs/                 locks whose name starts with jobs/
              locker list %00%00 --limit 20     binary keys, first 20
              locker --json list | jq -r '.locks[] | "\\(.key) \\(.holder.host) \\(.holder.pid)"'

            JSON: {"locks":[{"key":..,"column":..,"holder":{"rid":..,"host":..,"pid":..,"thread":..,"why":..,
                   "since":..},"token":..,"expiresAt":..}],"count":N,"truncated":false,"limit":1000}
                  (one line, written page by page: a failure midway, exit 3 or 4, leaves it unfinished)
            Exit: 0, also when nothing is held; 3 unreachable; 4 refused (e.g. Redis ACL without +scan +type).""";

    private static final String SHOW = """
            locker show NAME | --key K [--column C]

            Shows one lock: who holds it (rid, host, pid, thread, why, since), its fencing token and expiry, the
            last forced release (who, when, why, from whom) and, for a job run with runOnce/runAtMostOncePer, the
            last finished run (who, when, token). The token and expiry come from a listing by the lock's name,
            which may take a while on a large Redis (a status line says so).

            Examples:
              locker show nightly-report
              locker show vertex:42 --column name
              locker show --key %00%01binary --column %FF

            JSON: {"key":..,"column":..,"held":true,"holder":{..},"token":..,"expiresAt":..,
                   "lastForcedRelease":{"at":..,"by":{..},"reason":..,"released":{..},"releasedToken":..}|null,
                   "lastRun":{"ranBy":{..},"startedAt":..,"finishedAt":..,"token":..}|null}
            Exit: 0 held, 1 free, 3 unreachable, 4 refused.""";

    private static final String RELEASE = """
            locker release NAME --force --reason TEXT [--token N] [--holder RID]

            Removes every claim on the lock, whoever holds it (Locker.forceRelease), for a holder known to be dead
            or hung. It is recorded first: who forced it (this CLI, user and host), when, why and whom it took the
            lock from. The former holder's lost signal says FORCE_RELEASED with that record, 'locker show' prints
            it, and the next holder gets a higher fencing token, so the former holder's late writes are refused by
            a resource that checks tokens. Both --force and --reason are required (at most 1000 characters).

            Name the holder you mean, so that a lock that changed hands after 'locker show' (the old holder's
            claim ended, a live worker took the lock) is not taken from its new holder:
              --token N     release only the claim with fencing token N ('locker show' prints it), checked on the
                            backend in the same step as the removal; nothing is recorded when it is not the holder
              --holder RID  read the holder: refuse (exit 1) when its rid is not RID, else release by the token
                            just read, so the removal is still conditional on that exact claim (with --token too,
                            both must match)

            Examples:
              locker release nightly-report --force --reason "worker-3 was killed (INC-4711)" --token 1795375826825303
              locker release nightly-report --force --reason "worker-3 hangs" --holder worker-3-e0590c79e8af1086
              locker release vertex:42 --column name --force --reason "leaked JanusGraph transaction"

            JSON: {"key":..,"column":..,"released":true,"record":{"at":..,"by":{..},"reason":..,"released":{..}}}
                  (with --token/--holder: "expectedToken":N; when refused: "released":false,"why":..,
                  "holder":{..}|null,"token":..|null, and no record)
            Exit: 0 a claim was removed, 1 there was none (the record is written anyway) or, with --token/--holder,
            the named claim does not hold the lock (no claim removed), 2 without --force or --reason, or a bad
            --token, 3 unreachable, 4 refused.""";

    private static final String WATCH = """
            locker watch NAME [--interval 500ms] [--until-free] [--count N]

            Prints the lock's holder now and again whenever it changes (a new holder, released, unreachable), one
            line each with the time. It asks the backend every --interval (default 500ms; units ms, s, m), so a
            change shorter than that may be missed. Ctrl-C ends it with exit code 0. An unreachable backend is a
            line and the watch goes on; a refusal (credentials, ACL rights) ends it with exit code 4.

              --interval D    how often to ask (default 500ms, at least 50ms, at most 60m)
              --until-free    exit 0 as soon as the lock is free
              --count N       exit 0 after N lines

            Examples:
              locker watch nightly-report
              locker watch nightly-report --until-free && ./start-maintenance.sh
              locker --json watch vertex:42 --column name      one JSON object per line

            JSON lines: {"at":..,"key":..,"column":..,"held":true,"holder":{..}}  or  {"at":..,..,"error":".."}""";

    private static final String DOCTOR = """
            locker doctor

            Checks the deployment the URI names for what silently breaks locks, judging the URI's own options too.
            Each check prints OK, WARN or FAIL, one line why and what to change. It only reads.
              Redis:   server version and role; maxmemory-policy (allkeys-* and volatile-* may evict a held lock's
                       key: FAIL; noeviction: OK); persistence (AOF appendfsync always, or a restartGuard of at
                       least the expiry); run records (WARN unless AOF appendfsync always: a finished runOnce job
                       runs again after a restart that lost its record); the restart guard still running, or
                       another one recorded for the prefix (FAIL); ACL rights for every command Locker uses
                       (redis.acl_check_cmd); the servers' clocks (TIME) against serverClockSkew; replicas and
                       WAIT (asynchronous replication can lose a lock on failover).
              MongoDB: server and replica set; write concern (a majority of the set's voters, journaled: w=1
                       without journal=true FAILs on a standalone too) and read concern (majority); this host's
                       clock offset to the server and its uncertainty (vs lockerMaxClockSkewMS); the TTL index.
              HBase:   the table and its families; the claims family's TTL vs the expiry; the token family's TTL
                       (none allowed); NEW_VERSION_BEHAVIOR; the table's layout (WARN on the previous one:
                       see 'locker help hbase-layout'); the cluster's region servers and their clocks.
            A check whose input this user may not read (an INFO section denied by the ACL...) says WARN "could
            not check", never OK.

            Examples:
              locker doctor --uri redis://10.0.0.5:6379
              LOCKER_URI='mongodb://db1,db2,db3/?replicaSet=rs0' locker doctor
              locker --json doctor | jq '.findings[] | select(.level != "OK")'

            JSON: {"uri":..(masked),"findings":[{"check":..,"level":"OK|WARN|FAIL","why":..,"fix":..}],
                   "ok":N,"warn":N,"fail":N}
            Exit: 0 no FAIL (WARNs allowed), 1 at least one FAIL, 3 unreachable, 4 refused.""";

    private static final String HBASE_LAYOUT = """
            locker hbase-layout [--finalize]

            An HBase lock table's layout: which free value a holder's release writes in the lock's holder cell.
              layout 1  (tables made before this build) the empty value; the next grant checks two cells
              layout 2  (tables this build creates) free@token; the next grant checks one cell, a faster grant
            Lockers of earlier builds cannot read free@token and fail on any lock a layout 2 locker released last.
            So --finalize switches a table to layout 2 only when you say so: once every locker of the table runs
            this build. It sets the table's METADATA 'locker.layout' (as the hbase shell's
            alter 'TABLE', METADATA => {'locker.layout' => '2'} does); regions stay open unless the table has a
            coprocessor. Lockers read the value when they open the table: open ones switch when they next open it.
            Lockers on both layouts share the table safely meanwhile (docs/safety.md).

            Examples:
              locker hbase-layout --uri hbase://zk1:2181/locker_locks
              locker hbase-layout --uri hbase://zk1:2181/locker_locks --finalize
              locker --json hbase-layout | jq .layout

            JSON: {"uri":..(masked),"table":..,"layout":"1|2","current":bool,"switched":bool[,"before":"1"]}
            Exit: 0 done, 2 not an hbase:// URI, 3 unreachable, 4 refused (no such table, an unknown layout).""";

    static String text(String command) {
        if (command == null) {
            return OVERVIEW;
        }
        return switch (command) {
            case "list" -> LIST;
            case "show" -> SHOW;
            case "release" -> RELEASE;
            case "watch" -> WATCH;
            case "doctor" -> DOCTOR;
            case "hbase-layout" -> HBASE_LAYOUT;
            default -> OVERVIEW;
        };
    }
}
