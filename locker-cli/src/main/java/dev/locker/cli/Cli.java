package dev.locker.cli;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Locale;
import java.util.Map;

/**
 * The {@code locker} command: parses the command line, checks every argument before any I/O, opens the backend the
 * URI names, runs one command and maps its outcome to an exit code. It never prints a password: URIs are shown
 * masked and every printed line is scrubbed of the URI's secrets.
 *
 * <p>Exit codes: {@link #OK}, {@link #NO} (doctor found a FAIL; the lock is not held), {@link #USAGE},
 * {@link #UNREACHABLE}, {@link #REFUSED}, {@link #INTERRUPTED}, {@link #BUG}.
 */
public final class Cli {

    /** Done; the answer is yes (the lock is held, released; doctor found no FAIL). */
    public static final int OK = 0;
    /** Done; the answer is no: doctor found a FAIL, {@code show}/{@code release}: the lock is not held. */
    public static final int NO = 1;
    /** The command line is wrong (unknown option, bad name, bad URI, missing --force or --reason): nothing was done. */
    public static final int USAGE = 2;
    /** The backend could not be reached (or answered too slowly): try again later. */
    public static final int UNREACHABLE = 3;
    /** The backend refused (credentials, ACL rights, a missing table). */
    public static final int REFUSED = 4;
    /** An unexpected failure (a bug): {@code --verbose} prints its stack trace. */
    public static final int BUG = 5;
    /** Stopped by Ctrl-C (SIGINT), except {@code watch}, which exits 0. */
    public static final int INTERRUPTED = 130;

    private final Terminal terminal;
    private final Map<String, String> env;
    private volatile Thread running;
    private volatile boolean stopped;
    private volatile String command;

    /**
     * A CLI writing to the given streams.
     *
     * @param out         results
     * @param err         messages and status lines
     * @param env         the environment ({@code LOCKER_URI})
     * @param interactive whether stderr is a terminal (status lines are rewritten in place)
     */
    public Cli(PrintStream out, PrintStream err, Map<String, String> env, boolean interactive) {
        this.terminal = new Terminal(out, err, interactive);
        this.env = env;
    }

    /**
     * Runs one command line.
     *
     * @param argv the arguments
     * @return the exit code
     */
    public int run(String... argv) {
        running = Thread.currentThread();
        Args args = null;
        boolean verbose = false;
        try {
            args = Args.parse(argv);
            verbose = args.flag("--verbose");
            command = args.command;
            if (args.command == null || args.command.equals("help") || args.flag("--help")) {
                String topic = args.command == null || args.command.equals("help") ? args.positional(0) : args.command;
                if (topic != null && !Args.COMMANDS.containsKey(topic)) {
                    throw new UsageException("no help on '" + topic + "'; commands: list, show, release, watch, "
                            + "doctor, hbase-layout", null);
                }
                terminal.out(Help.text(topic));
                return args.command == null && !args.flag("--help") ? USAGE : OK;
            }
            String uri = uri(args);
            terminal.hide(uri);
            return switch (args.command) {
                case "list" -> new ListCommand(this, args).run(uri);
                case "show" -> new ShowCommand(this, args).run(uri);
                case "release" -> new ReleaseCommand(this, args).run(uri);
                case "watch" -> new WatchCommand(this, args).run(uri);
                case "doctor" -> new DoctorCommand(this, args).run(uri);
                case "hbase-layout" -> new HBaseLayoutCommand(this, args).run(uri);
                default -> throw new IllegalStateException("command " + args.command);
            };
        } catch (UsageException e) {
            terminal.err("locker: " + e.getMessage());
            terminal.err(e.command() == null ? "Run 'locker --help' for the commands and examples."
                    : "Run 'locker help " + e.command() + "' for examples.");
            return USAGE;
        } catch (IllegalArgumentException e) {
            terminal.err("locker: " + e.getMessage());
            return USAGE;
        } catch (TemporaryLockingException e) {
            if (stopped) {
                return interruptedCode();
            }
            terminal.err("locker: backend unreachable: " + message(e));
            trace(verbose, e);
            return UNREACHABLE;
        } catch (PermanentLockingException e) {
            terminal.err("locker: backend refused: " + message(e));
            trace(verbose, e);
            return REFUSED;
        } catch (LockingException e) {
            terminal.err("locker: " + message(e));
            trace(verbose, e);
            return REFUSED;
        } catch (RuntimeException e) {
            if (stopped) {
                return interruptedCode();
            }
            terminal.err("locker: unexpected failure: " + e + (verbose ? "" : " (--verbose prints the stack trace)"));
            trace(verbose, e);
            return BUG;
        } finally {
            running = null;
        }
    }

    /**
     * Asks a running command to stop (Ctrl-C): {@code watch} ends its loop and exits 0; others stop where they are.
     */
    public void interrupt() {
        stopped = true;
        Thread t = running;
        if (t != null) {
            t.interrupt();
        }
    }

    /** The exit code after {@link #interrupt()}: 0 for watch, else {@link #INTERRUPTED}. */
    int interruptedCode() {
        return "watch".equals(command) ? OK : INTERRUPTED;
    }

    /**
     * {@code text} with the current URI's secrets masked (for streams the CLI does not write itself).
     *
     * @param text any text
     * @return the text, secrets replaced by {@code ***}
     */
    public String scrub(String text) {
        return terminal.scrub(text);
    }

    boolean stopped() {
        return stopped;
    }

    Terminal terminal() {
        return terminal;
    }

    /** The URI from {@code --uri}, else {@code $LOCKER_URI}; a usage error when neither is set. */
    private String uri(Args args) {
        String uri = args.value("--uri");
        if (uri == null) {
            uri = env.get("LOCKER_URI");
        }
        if (uri == null || uri.isBlank()) {
            throw new UsageException("which backend? give --uri URI or set LOCKER_URI (e.g. redis://localhost:6379, "
                    + "mongodb://db1/?replicaSet=rs0, hbase://zk1:2181/locker_locks)", args.command);
        }
        uri = uri.trim();
        if (uri.indexOf(':') <= 0 || !Lockers.providers().containsKey(scheme(uri))) {
            throw new UsageException(schemeRefusal(uri), args.command);
        }
        String scheme = scheme(uri);
        if (scheme.equals("mem")) {
            terminal.err("locker: note: mem: keeps locks inside one JVM; this command sees only its own process's "
                    + "locks, never another process's");
        }
        return uri;
    }

    static String scheme(String uri) {
        return uri.substring(0, uri.indexOf(':')).toLowerCase(Locale.ROOT);
    }

    /**
     * Opens the backend as an operator's locker: its rid names the CLI and the user (recorded as who forced a
     * release). An HBase URI that does not say otherwise gets {@code createTable=false}: the CLI never creates a table.
     */
    Locker open(String uri) {
        String user = System.getProperty("user.name", "").replaceAll("[^A-Za-z0-9._@-]", "");
        String rid = "locker-cli" + (user.isEmpty() ? "" : ":" + (user.length() > 40 ? user.substring(0, 40) : user));
        LockerConfig config = LockerConfig.builder().rid(rid).build();
        String effective = uri;
        if (scheme(uri).equals("hbase") && !uri.contains("createTable=")) {
            effective = uri + (uri.contains("?") ? "&" : "?") + "createTable=false";
        }
        try (StatusLine s = new StatusLine(terminal, "connecting to " + Secrets.mask(uri))) {
            return Lockers.open(effective, config);
        }
    }

    /** A lock named by {@code NAME} or {@code --key K}, with {@code --column C}; checked before any I/O. */
    static KeyColumn lock(Args args) {
        String name = args.positional(0);
        String key = args.value("--key");
        if (name != null && key != null) {
            throw new UsageException("name the lock once: NAME or --key K, not both", args.command);
        }
        if (name == null && key == null) {
            throw new UsageException("which lock? give its NAME (or --key K [--column C])", args.command);
        }
        byte[] k = LockNames.parse(name != null ? name : key, name != null ? "NAME" : "--key");
        if (k.length == 0) {
            throw new UsageException("a lock's name must not be empty", args.command);
        }
        String column = args.value("--column");
        byte[] c = column == null ? new byte[0] : LockNames.parse(column, "--column");
        return KeyColumn.of(k, c);
    }

    /** Lockers' own refusal of a URI whose scheme no backend here serves: it names the schemes and the module. */
    private static String schemeRefusal(String uri) {
        try {
            Lockers.check(uri, LockerConfig.defaults());
        } catch (IllegalArgumentException e) {
            return new Secrets(uri).scrub(e.getMessage());
        }
        return "no backend for the URI '" + Secrets.mask(uri) + "'";
    }

    private static String message(Throwable e) {
        String m = e.getMessage();
        return m == null ? e.toString() : m;
    }

    private void trace(boolean verbose, Throwable e) {
        if (verbose) {
            StringWriter w = new StringWriter();
            e.printStackTrace(new PrintWriter(w));
            terminal.err(w.toString().stripTrailing());
        }
    }
}
