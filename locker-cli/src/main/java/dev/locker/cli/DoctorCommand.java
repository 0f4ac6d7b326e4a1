package dev.locker.cli;

import dev.locker.spi.DeploymentCheck;
import dev.locker.spi.DeploymentCheck.Finding;
import dev.locker.spi.DeploymentCheck.Level;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code locker doctor}: runs the {@link DeploymentCheck} that the URI scheme's backend module ships and prints each
 * finding; exit code 1 when any is FAIL. A scheme without checks gets one WARN saying so.
 */
final class DoctorCommand {

    private final Cli cli;
    private final Args args;

    DoctorCommand(Cli cli, Args args) {
        this.cli = cli;
        this.args = args;
    }

    int run(String uri) {
        String scheme = Cli.scheme(uri);
        List<Finding> findings;
        Optional<DeploymentCheck> check = DeploymentCheck.forScheme(scheme);
        if (scheme.equals("mem")) {
            findings = List.of(Finding.warn("in-jvm", "mem: keeps locks inside one JVM: two processes never see each "
                    + "other's locks, so it excludes nothing across processes",
                    "use a backend shared by every process (redis://, mongodb://, hbase://) for cross-process locks"));
        } else if (check.isEmpty()) {
            findings = List.of(Finding.warn("no-checks", "the module of scheme '" + scheme + "' ships no deployment "
                    + "checks (no dev.locker.spi.DeploymentCheck for it on the classpath)", "check it by hand"));
        } else {
            try (StatusLine status = new StatusLine(cli.terminal(), "checking " + Secrets.mask(uri))) {
                findings = check.get().check(uri, status::update);
            }
        }
        int ok = 0;
        int warn = 0;
        int fail = 0;
        for (Finding f : findings) {
            switch (f.level()) {
                case OK -> ok++;
                case WARN -> warn++;
                case FAIL -> fail++;
                default -> throw new IllegalStateException(f.level().toString());
            }
        }
        if (args.flag("--json")) {
            Map<String, Object> doc = new LinkedHashMap<>();
            doc.put("uri", Secrets.mask(uri));
            List<Object> list = new ArrayList<>();
            for (Finding f : findings) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("check", f.check());
                m.put("level", f.level().name());
                m.put("why", f.why());
                m.put("fix", f.fix());
                list.add(m);
            }
            doc.put("findings", list);
            doc.put("ok", ok);
            doc.put("warn", warn);
            doc.put("fail", fail);
            cli.terminal().json(doc);
        } else {
            Terminal t = cli.terminal();
            t.out("locker doctor: " + Secrets.mask(uri));
            int width = findings.stream().mapToInt(f -> f.check().length()).max().orElse(0);
            for (Finding f : findings) {
                t.out(String.format("%-4s  %-" + width + "s  %s", f.level(), f.check(), f.why()));
                if (!f.fix().isEmpty()) {
                    t.out(" ".repeat(width + 8) + "fix: " + f.fix());
                }
            }
            t.out(fail + " FAIL, " + warn + " WARN, " + ok + " OK"
                    + (fail > 0 ? ": this deployment can break locks" : warn > 0 ? ": locks are safe; see the warnings"
                    : ": no problem found"));
        }
        return fail > 0 ? Cli.NO : Cli.OK;
    }

    static boolean anyFail(List<Finding> findings) {
        return findings.stream().anyMatch(f -> f.level() == Level.FAIL);
    }
}
