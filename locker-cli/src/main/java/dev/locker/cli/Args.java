package dev.locker.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The parsed command line: the command, its positional arguments, options with values ({@code --opt VALUE} or
 * {@code --opt=VALUE}) and flags ({@code --opt}). Global options may stand anywhere; {@code --} ends options.
 * Anything unknown, a missing value or a repeated option is a {@link UsageException}.
 */
final class Args {

    /** Options every command takes: with a value, and flags. */
    static final Set<String> GLOBAL_VALUES = Set.of("--uri");
    static final Set<String> GLOBAL_FLAGS = Set.of("--json", "--help", "--verbose");

    /** Each command's own options. */
    record Spec(Set<String> values, Set<String> flags, int minPositionals, int maxPositionals) {
    }

    static final Map<String, Spec> COMMANDS = Map.of(
            "list", new Spec(Set.of("--limit"), Set.of(), 0, 1),
            "show", new Spec(Set.of("--key", "--column"), Set.of(), 0, 1),
            "release", new Spec(Set.of("--key", "--column", "--reason", "--token", "--holder"), Set.of("--force"), 0,
                    1),
            "watch", new Spec(Set.of("--key", "--column", "--interval", "--count"), Set.of("--until-free"), 0, 1),
            "doctor", new Spec(Set.of(), Set.of(), 0, 0),
            "hbase-layout", new Spec(Set.of(), Set.of("--finalize"), 0, 0),
            "help", new Spec(Set.of(), Set.of(), 0, 1));

    final String command;
    final List<String> positionals;
    final Map<String, String> values;
    final Set<String> flags;

    private Args(String command, List<String> positionals, Map<String, String> values, Set<String> flags) {
        this.command = command;
        this.positionals = positionals;
        this.values = values;
        this.flags = flags;
    }

    static Args parse(String[] argv) {
        String command = null;
        List<String> positionals = new ArrayList<>();
        Map<String, String> values = new LinkedHashMap<>();
        Set<String> flags = new TreeSet<>();
        boolean optionsEnded = false;
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (a == null) {
                throw new UsageException("an argument is null", command);
            }
            if (!optionsEnded && a.equals("--")) {
                optionsEnded = true;
                continue;
            }
            if (!optionsEnded && (a.equals("-h") || a.equals("-help"))) {
                a = "--help";
            }
            if (!optionsEnded && a.startsWith("--")) {
                int eq = a.indexOf('=');
                String name = eq > 0 ? a.substring(0, eq) : a;
                Spec spec = command == null ? null : COMMANDS.get(command);
                boolean takesValue = GLOBAL_VALUES.contains(name) || spec != null && spec.values().contains(name);
                boolean isFlag = GLOBAL_FLAGS.contains(name) || spec != null && spec.flags().contains(name);
                if (!takesValue && !isFlag) {
                    throw new UsageException("unknown option " + name + (command == null ? "" : " for '" + command
                            + "'") + "; known: " + known(spec), command);
                }
                if (isFlag) {
                    if (eq > 0) {
                        throw new UsageException("option " + name + " takes no value", command);
                    }
                    flags.add(name);
                    continue;
                }
                String value;
                if (eq > 0) {
                    value = a.substring(eq + 1);
                } else if (i + 1 < argv.length) {
                    value = argv[++i];
                } else {
                    throw new UsageException("option " + name + " needs a value", command);
                }
                if (values.put(name, value) != null) {
                    throw new UsageException("option " + name + " given twice", command);
                }
                continue;
            }
            if (!optionsEnded && a.startsWith("-") && a.length() > 1) {
                throw new UsageException("unknown option " + a + " (options start with --)", command);
            }
            if (command == null) {
                if (!COMMANDS.containsKey(a)) {
                    throw new UsageException("unknown command '" + a + "'; commands: list, show, release, watch, "
                            + "doctor, help", null);
                }
                command = a;
            } else {
                positionals.add(a);
            }
        }
        // options given before the command are checked against it now
        if (command != null) {
            Spec spec = COMMANDS.get(command);
            for (String v : values.keySet()) {
                if (!GLOBAL_VALUES.contains(v) && !spec.values().contains(v)) {
                    throw new UsageException("unknown option " + v + " for '" + command + "'; known: " + known(spec),
                            command);
                }
            }
            if (positionals.size() > spec.maxPositionals()) {
                throw new UsageException("'" + command + "' takes " + (spec.maxPositionals() == 0 ? "no argument"
                        : "at most " + spec.maxPositionals() + " argument") + ", got " + positionals, command);
            }
        }
        return new Args(command, positionals, values, flags);
    }

    private static String known(Spec spec) {
        Set<String> all = new TreeSet<>(GLOBAL_VALUES);
        all.addAll(GLOBAL_FLAGS);
        if (spec != null) {
            all.addAll(spec.values());
            all.addAll(spec.flags());
        }
        return String.join(", ", all);
    }

    boolean flag(String name) {
        return flags.contains(name);
    }

    String value(String name) {
        return values.get(name);
    }

    String positional(int i) {
        return i < positionals.size() ? positionals.get(i) : null;
    }
}
