package dev.locker.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.net.ServerSocket;

import static org.junit.jupiter.api.Assertions.assertFalse;

/** What the CLI tests share: a port nothing listens on, the JSON reader, and checks of a run's output. */
final class CliChecks {

    static final ObjectMapper JSON = new ObjectMapper();

    private CliChecks() {
    }

    /** A loopback port nothing listens on: any I/O to it fails as unreachable. */
    static int deadPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static void assertNoSecret(CliRun run, String... secrets) {
        for (String s : secrets) {
            assertFalse((run.out() + run.err()).contains(s), "'" + s + "' printed:\n" + run);
        }
    }

    /** The doctor's finding named {@code check} in its JSON report. */
    static JsonNode finding(JsonNode doctor, String check) {
        for (JsonNode f : doctor.get("findings")) {
            if (f.get("check").asText().equals(check)) {
                return f;
            }
        }
        throw new AssertionError("no " + check + " in " + doctor);
    }
}
