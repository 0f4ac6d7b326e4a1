package dev.locker.cli;

import dev.locker.mongo.InProcessMongo;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static dev.locker.cli.CliChecks.deadPort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Bad arguments are usage errors (exit 2) before any I/O, with a clear message and no stack trace. */
class CliUsageTest {


    /**
     * A duration too large for a long count of milliseconds, and a malformed doctor option, are usage errors. Neither
     * reaches the backend nor fails later as an unexpected failure.
     */
    @Test
    void overflowingDurationsAndMalformedDoctorOptionsAreUsageErrors() throws Exception {
        Map<String, String> env = Map.of("LOCKER_URI", "redis://127.0.0.1:" + deadPort());
        CliRun huge = CliRun.run(env, "watch", "x", "--interval", "9223372036854775807s");
        assertEquals(Cli.USAGE, huge.code(), huge::toString);
        CliRun minutes = CliRun.run(env, "watch", "x", "--interval", "999999999999999999m");
        assertEquals(Cli.USAGE, minutes.code(), minutes::toString);
        CliRun tooLong = CliRun.run(env, "watch", "x", "--interval", "61m");
        assertEquals(Cli.USAGE, tooLong.code(), tooLong::toString);
        try (InProcessMongo mongo = InProcessMongo.start()) {
            CliRun skew = CliRun.run(Map.of(), "doctor", "--uri", mongo.uri() + "&lockerMaxClockSkewMS=10s");
            assertEquals(Cli.USAGE, skew.code(), skew::toString);
        }
    }

    @Test
    void everyBadArgumentIsAUsageErrorBeforeAnyIoWithoutAStackTrace() throws Exception {
        // a dead port: any I/O would end in 3, not 2
        Map<String, String> env = Map.of("LOCKER_URI", "redis://127.0.0.1:" + deadPort());
        List<String[]> bad = List.of(
                new String[] {"list", "--limit", "-1"}, new String[] {"list", "--limit", "0"},
                new String[] {"list", "--limit", "1e3"}, new String[] {"list", "--limit"},
                new String[] {"watch", "x", "--count", "0"}, new String[] {"watch", "x", "--interval", "0ms"},
                new String[] {"watch", "x", "--interval", "-1s"}, new String[] {"watch", "x", "--interval", "1h"},
                new String[] {"watch", "x", "--interval", "10ms"}, new String[] {"show", "x%0"},
                new String[] {"show", "%zz"}, new String[] {"show", ""}, new String[] {"show", "x", "y"},
                new String[] {"release", "x", "--force=yes", "--reason", "r"},
                new String[] {"release", "x", "--reason", "r"}, new String[] {"release", "x", "--force"},
                new String[] {"release", "x", "--force", "--reason", "  "}, new String[] {"doctor", "extra"},
                new String[] {"list", "--uri", "localhost"}, new String[] {"list", "--uri", ":6379"},
                new String[] {"list", "--uri", " "}, new String[] {"-x", "list"}, new String[] {"list", "--uri=a", "--uri=b"},
                new String[] {"show", "\uD800"}, new String[] {"show", "a".repeat(5000)},
                new String[] {"release", "a".repeat(5000), "--force", "--reason", "r"});
        for (String[] args : bad) {
            CliRun run = CliRun.run(env, args);
            assertEquals(Cli.USAGE, run.code(), () -> String.join(" ", args) + "\n" + run);
            assertFalse(run.err().contains("\tat ") || run.err().contains("Exception"), run::toString);
            assertTrue(run.out().isEmpty(), run::toString);
        }
    }
}
