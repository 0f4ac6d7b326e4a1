package dev.locker.bench;

import dev.locker.bench.Table.Better;
import dev.locker.bench.Table.Row;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The in-JVM rows: the LocalLockMediator against a bare map, in paired blocks in forked JVMs. */
final class MediatorRows {

    private final Run run;

    MediatorRows(Run run) {
        this.run = run;
    }

    /**
     * Forks: each round starts a fresh JVM per thread count that runs every contender paired ({@link
     * MediatorBench#paired}: short blocks alternating between the contenders in one JVM, so that the JIT's choices and
     * the machine's load fall on both sides alike); each fork gives one sample per contender, so a row's spread is
     * the spread between forks. Default JVM flags (G1, as users run it): the record's allocation is part of the cost.
     */
    void run() throws Exception {
        int forks = run.quick() ? 2 : 5;
        long warmupMs = run.quick() ? 1500 : 2500;
        long measureMs = run.quick() ? 1500 : 3000;
        for (int threads : new int[]{1, 2}) {
            Map<String, Samples> byName = new LinkedHashMap<>();
            for (String n : MediatorBench.SIDES) {
                byName.put(n, new Samples());
            }
            for (int fork = 0; fork < forks; fork++) {
                List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-cp", System.getProperty("java.class.path"), "-Xmx1g", MediatorBench.class.getName(),
                        Integer.toString(threads), Long.toString(warmupMs), Long.toString(measureMs));
                Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
                try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
                        StandardCharsets.US_ASCII))) {
                    for (String line; (line = in.readLine()) != null; ) {
                        String[] f = line.split(" ");
                        byName.get(f[0]).add(Double.parseDouble(f[1]));
                    }
                }
                if (p.waitFor() != 0) {
                    throw new IllegalStateException("the mediator fork failed: " + cmd);
                }
            }
            String t = threads + " thread" + (threads > 1 ? "s" : "");
            String how = forks + " forks of paired blocks; time per pair";
            run.table().add(new Row("LocalLockMediator take+release, " + t + " (" + how
                    + "; the lock's record made beforehand, as the map's value)", "ns", byName.get("mediatorOnly"),
                    "bare ConcurrentHashMap putIfAbsent+remove", byName.get("bareMapOnly"), Better.LOWER, 1 / 0.9,
                    false));
            run.table().add(new Row("the same with the record made per pair (a new hold, 96 B), " + t, "ns",
                    byName.get("mediator"), "bare ConcurrentHashMap, a new Object per pair", byName.get("bareMap"),
                    Better.LOWER, 1 / 0.9, false));
            run.table().add(new Row("the same as an acquire pays it, " + t + " (+ the hold's clock reading and state change)",
                    "ns", byName.get("acquirePath"), "bare ConcurrentHashMap, a new Object per pair",
                    byName.get("bareMap"), Better.LOWER, 1 / 0.9, false)); // the row the first published figures measured, so runs compare
        }
    }
}
