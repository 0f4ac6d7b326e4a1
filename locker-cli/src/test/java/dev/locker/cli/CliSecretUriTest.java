package dev.locker.cli;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.ServerSocket;
import java.util.List;
import java.util.Map;

import static dev.locker.cli.CliChecks.assertNoSecret;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * URIs that carry secrets awkwardly: a raw '&amp;', '/', '?', '@' or ':' in a password, a mistyped scheme separator,
 * a token in an option named for something else. Whatever the command, and with --verbose, the CLI prints no piece of
 * the secret, in the URI it shows or in the backend's refusal, and still says what is wrong.
 */
class CliSecretUriTest {

    private static int deadPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static void assertNothingOf(CliRun run, String... pieces) {
        for (String piece : pieces) {
            assertFalse((run.out() + run.err()).contains(piece), "'" + piece + "' printed:\n" + run);
        }
    }

    @Test
    void anUnknownOptionAfterASecretIsRefusedWithoutShowingIt() throws IOException {
        int dead = deadPort();
        String[] uris = {
                "redis://127.0.0.1:" + dead + "?password=Pw0a&Pw0b=Pw0c&expiry=1s",
                "redis://127.0.0.1:" + dead + "?password=Pw0a&Pw0b",
                "rediss://127.0.0.1:" + dead + "?truststore=/t.p12&truststorePassword=Pw0a&Pw0b=1",
                "mongodb://127.0.0.1:" + dead + "/db?authMechanismProperties=AWS_SESSION_TOKEN:Pw0a&Pw0b=1",
                "mongodb://127.0.0.1:" + dead + "/db?authMechanismProperties=AWS_SESSION_TOKEN:Pw0a;Pw0b=1&w=1",
                "mongodb://127.0.0.1:" + dead + "/db?proxyHost=p&proxyPassword=Pw0a&Pw0b=1"};
        for (String uri : uris) {
            for (String[] args : new String[][]{{"list"}, {"doctor"}, {"show", "x", "--verbose"}, {"doctor", "--json"}}) {
                CliRun run = CliRun.run(Map.of("LOCKER_URI", uri), args);
                assertEquals(Cli.USAGE, run.code(), run::toString);
                assertTrue(run.err().contains("an unknown option follows the secret option")
                        || run.err().contains("an option without a value follows the secret option"), run::toString);
                assertTrue(run.err().contains("%26"), "says how to write it: " + run);
                assertNothingOf(run, "Pw0");
            }
        }
    }

    @Test
    void anOrdinaryUnknownOptionIsNamedAndAMongoOneIsRefusedBeforeAnyConnection() throws IOException {
        int dead = deadPort();
        CliRun redis = CliRun.run(Map.of(), "list", "--uri", "redis://:Pw0a@127.0.0.1:" + dead + "?prefix=p&timeot=1s");
        assertEquals(Cli.USAGE, redis.code(), redis::toString);
        assertTrue(redis.err().contains("unknown option 'timeot'"), redis::toString);
        assertNothingOf(redis, "Pw0");
        CliRun mongo = CliRun.run(Map.of(), "doctor", "--uri", "mongodb://u:Pw0a@127.0.0.1:" + dead + "/db?expiry=1s&foo=1");
        assertEquals(Cli.USAGE, mongo.code(), mongo::toString);
        assertTrue(mongo.err().contains("unknown option 'foo'"), mongo::toString);
        assertFalse(mongo.err().contains("connecting to MongoDB"), "refused before any I/O: " + mongo);
        assertNothingOf(mongo, "Pw0");
    }

    /** The mask the CLI prints a URI with, and the scrubber of its free text, know the backend's options too. */
    @Test
    void theMaskAndTheScrubberTakeInWhatFollowsASecret() {
        assertEquals("redis://localhost:1?password=***&expiry=1s",
                Secrets.mask("redis://localhost:1?password=ab&cd=ef&expiry=1s"));
        assertEquals("mongodb://h/db?authMechanismProperties=***&w=1",
                Secrets.mask("mongodb://h/db?authMechanismProperties=AWS_SESSION_TOKEN:ab&cd=1&w=1"));
        Secrets s = new Secrets("redis://localhost:1?password=Pw0a&Pw0b=Pw0c&expiry=1s");
        String text = s.scrub("AUTH Pw0a&Pw0b=Pw0c failed; option Pw0b=Pw0c; Pw0a");
        assertFalse(text.contains("Pw0"), text);
    }

    /** A URI whose scheme separator is mistyped (redis//, redis:/) is refused without printing its password. */
    @Test
    void aMistypedSchemeSeparatorDoesNotPrintThePassword() throws Exception {
        int dead = deadPort();
        CliRun noColon = CliRun.run(Map.of(), "list", "--uri", "redis//locker:S3cretPw99@127.0.0.1:" + dead);
        assertEquals(Cli.USAGE, noColon.code(), noColon::toString);
        assertNoSecret(noColon, "S3cretPw99");
        CliRun oneSlash = CliRun.run(Map.of(), "list", "--uri", "redis:/locker:S3cretPw99@127.0.0.1:" + dead);
        assertEquals(Cli.USAGE, oneSlash.code(), oneSlash::toString);
        assertNoSecret(oneSlash, "S3cretPw99");
        CliRun env = CliRun.run(Map.of("LOCKER_URI", "mongodb:/locker:S3cretPw99@127.0.0.1:" + dead), "list");
        assertNoSecret(env, "S3cretPw99");
    }

    /** A password holding a raw '/' or '?' makes the URI malformed. No part of the password is printed. */
    @Test
    void aPasswordWithARawSlashOrQuestionMarkIsNotPrinted() throws Exception {
        int dead = deadPort();
        CliRun slash = CliRun.run(Map.of(), "list", "--uri", "redis://locker:S3c/retPw99@127.0.0.1:" + dead);
        assertEquals(Cli.USAGE, slash.code(), slash::toString);
        assertNoSecret(slash, "retPw99", "S3c/");
        CliRun question = CliRun.run(Map.of(), "list", "--uri", "redis://locker:S3c?retPw99@127.0.0.1:" + dead);
        assertNoSecret(question, "'S3c'", "retPw99");
        CliRun mongo = CliRun.run(Map.of(), "list", "--uri", "mongodb://locker:S3c/retPw99@127.0.0.1:" + dead + "/");
        assertNoSecret(mongo, "retPw99");
    }

    /**
     * A MongoDB URI may carry a secret in an option whose name says nothing of passwords (AWS_SESSION_TOKEN). It is
     * masked like a password.
     */
    @Test
    void anAwsSessionTokenInTheMongoUriIsNotPrinted() {
        CliRun run = CliRun.run(Map.of(), "list", "--uri", "mongodb://AKIAEXAMPLE:S3cretPw99@127.0.0.1:27O17/"
                + "?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:T0kenSecret77");
        assertEquals(Cli.USAGE, run.code(), run::toString);
        assertNoSecret(run, "S3cretPw99", "T0kenSecret77");
    }

    /**
     * Passwords holding '@', '#' or ':', raw or encoded, and TLS store passwords are neither masked wrong nor printed.
     */
    @Test
    void passwordsWithEncodedOrRawAtHashAndColonAreNeitherMaskedWrongNorPrinted() throws Exception {
        int dead = deadPort();
        for (String uri : List.of("redis://locker:S3cr@tPw99@127.0.0.1:" + dead,
                "redis://locker:S3c#retPw99@127.0.0.1:" + dead,
                "redis://locker:S3c:retPw99@127.0.0.1:" + dead,
                "redis://locker:S3c%2Fr%40tPw99@127.0.0.1:" + dead,
                "redis://:S3cretPw99@127.0.0.1:" + dead,
                "rediss://127.0.0.1:" + dead + "?keystorePassword=S3cretPw99&truststorePassword=S3cretPw98")) {
            CliRun run = CliRun.run(Map.of(), "--verbose", "list", "--uri", uri);
            assertNotEquals(Cli.OK, run.code(), run::toString);
            assertNoSecret(run, "S3cretPw99", "S3cretPw98", "tPw99", "retPw99", "S3c/r@tPw99", "S3c%2Fr%40tPw99");
            assertFalse(run.err().contains("unexpected failure"), run::toString);
        }
        CliRun json = CliRun.run(Map.of("LOCKER_URI", "redis://locker:S3cretPw99@127.0.0.1:" + dead), "--json",
                "show", "x");
        assertEquals(Cli.UNREACHABLE, json.code(), json::toString);
        assertNoSecret(json, "S3cretPw99");
    }
}
