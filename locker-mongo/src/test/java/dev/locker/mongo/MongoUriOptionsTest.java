package dev.locker.mongo;

import com.mongodb.ConnectionString;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import org.junit.jupiter.api.parallel.Isolated;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The options of a mongodb:// URI: an unknown one is refused before the driver parses the URI (the driver would only
 * log it, naming it, and ignore it), every option the driver documents is accepted in any case, and an unknown option
 * after a secret (a raw '&' in it) is neither shown nor named. Port 1: nothing listens, nothing is connected.
 */
// alone: it reads the driver's log from System.err, which it swaps for the whole JVM
@Isolated
class MongoUriOptionsTest {

    /**
     * The options the javadoc of the driver's ConnectionString (mongodb-driver-core 5.5.1) documents, as it spells
     * them, and readConcernLevel, which MongoDB's connection string manual documents and the driver reads.
     */
    static final List<String> DOCUMENTED = List.of("appName", "authMechanism", "authMechanismProperties", "authSource",
            "compressors", "connectTimeoutMS", "directConnection", "gssapiServiceName", "heartbeatFrequencyMS",
            "journal", "loadBalanced", "localThresholdMS", "maxConnecting", "maxIdleTimeMS", "maxLifeTimeMS",
            "maxPoolSize", "maxStalenessSeconds", "minPoolSize", "proxyHost", "proxyPassword", "proxyPort",
            "proxyUsername", "readConcernLevel", "readPreference", "readPreferenceTags", "replicaSet", "retryReads",
            "retryWrites", "safe", "serverMonitoringMode", "serverSelectionTimeoutMS", "socketTimeoutMS", "srvMaxHosts",
            "srvServiceName", "ssl", "sslInvalidHostNameAllowed", "timeoutMS", "tls", "tlsAllowInvalidHostnames",
            "tlsInsecure", "uuidRepresentation", "w", "waitQueueTimeoutMS", "wtimeoutMS", "zlibCompressionLevel");

    private static final LockerConfig CONFIG = LockerConfig.defaults();

    /** What {@code run} wrote to System.err, where the tests' slf4j-simple writes the driver's log. */
    static String stderrOf(Executable run) throws Throwable {
        PrintStream saved = System.err;
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        System.setErr(new PrintStream(buffer, true, StandardCharsets.UTF_8));
        try {
            run.execute();
        } finally {
            System.setErr(saved);
        }
        return buffer.toString(StandardCharsets.UTF_8);
    }

    private static IllegalArgumentException refused(String uri, List<String> driverLog) throws Throwable {
        IllegalArgumentException[] e = new IllegalArgumentException[1];
        driverLog.add(stderrOf(() -> e[0] = assertThrows(IllegalArgumentException.class, () -> Lockers.check(uri, CONFIG), uri)));
        return e[0];
    }

    /** The control for the tests below: the driver, given an option it does not know, logs it where they look. */
    @Test
    void theDriverItselfLogsAnUnknownOptionNamingIt() throws Throwable {
        String log = stderrOf(() -> new ConnectionString("mongodb://localhost:1/db?foo=1"));
        assertTrue(log.contains("org.mongodb.driver") && log.contains("unsupported option 'foo'"), log);
    }

    @Test
    void anUnknownOptionIsRefusedBeforeTheDriverReadsIt() throws Throwable {
        List<String> log = new ArrayList<>();
        IllegalArgumentException e = refused("mongodb://localhost:1/db?expiry=1s&foo=1", log);
        assertTrue(e.getMessage().startsWith("bad MongoDB URI 'mongodb://localhost:1/db?expiry=1s&foo=1': unknown option 'foo'"),
                e.getMessage());
        assertTrue(e.getMessage().contains("authmechanismproperties") && e.getMessage().contains("lockerCollection")
                && e.getMessage().contains("expiry"), "lists the known options: " + e.getMessage());
        assertEquals("", log.get(0), "the driver never saw the option, so it logged nothing");
        IllegalArgumentException open = assertThrows(IllegalArgumentException.class,
                () -> Lockers.open("mongodb://localhost:1/db?expiry=1s&foo=1", CONFIG));
        assertEquals(e.getMessage(), open.getMessage());
    }

    @Test
    void anUnknownOptionAfterASecretIsNeitherShownNorNamedNorLogged() throws Throwable {
        List<String> log = new ArrayList<>();
        IllegalArgumentException e = refused("mongodb://localhost:1/db?authMechanismProperties=AWS_SESSION_TOKEN:ab&cd=1", log);
        assertTrue(e.getMessage().startsWith("bad MongoDB URI 'mongodb://localhost:1/db?authMechanismProperties=***': an "
                + "unknown option follows the secret option 'authMechanismProperties'"), e.getMessage());
        assertTrue(e.getMessage().contains("%26"), e.getMessage());
        assertFalse(e.getMessage().contains("cd"), e.getMessage());
        for (String uri : new String[]{
                "mongodb://localhost:1/db?authMechanismProperties=AWS_SESSION_TOKEN:Pw0a&Pw0b=Pw0c",
                "mongodb://localhost:1/db?authMechanismProperties=AWS_SESSION_TOKEN:Pw0a;Pw0b=Pw0c&w=1",
                "mongodb://localhost:1/db?authMechanismProperties=AWS_SESSION_TOKEN:Pw0a&Pw0b",
                "mongodb://localhost:1/db?authMechanismProperties=AWS_SESSION_TOKEN:Pw0a&=Pw0b",
                "mongodb://localhost:1/db?authMechanismProperties=AWS_SESSION_TOKEN:Pw0a&lockerPw0b=1",
                "mongodb://localhost:1/db?proxyHost=p&proxyPassword=Pw0a&Pw0b=1&proxyUsername=u",
                "mongodb://u:Pw0a@localhost:1/db?w=1&password=Pw0b&Pw0c=1",
                "mongodb://u:Pw0a?Pw0b=1@localhost:1/db",
                "mongodb://u:Pw0a&Pw0b=1@localhost:1/db?foo=1"}) {
            IllegalArgumentException leak = refused(uri, log);
            for (Throwable t = leak; t != null; t = t.getCause()) {
                assertFalse(String.valueOf(t.getMessage()).contains("Pw0"), uri + ": " + t);
            }
            assertFalse(Lockers.redact(uri).contains("Pw0"), Lockers.redact(uri));
        }
        for (String driverLog : log) {
            assertFalse(driverLog.contains("Pw0") || driverLog.contains("'cd'"), driverLog);
        }
    }

    @Test
    void anUnknownOptionAfterAnOrdinaryOneIsNamed() throws Throwable {
        IllegalArgumentException e = refused("mongodb://u:Pw0@localhost:1/db?w=1&replicaSt=rs0", new ArrayList<>());
        assertTrue(e.getMessage().startsWith("bad MongoDB URI 'mongodb://u:***@localhost:1/db?w=1&replicaSt=rs0': "
                + "unknown option 'replicaSt'"), e.getMessage());
        IllegalArgumentException noValue = refused("mongodb://localhost:1/db?w=1&journal", new ArrayList<>());
        assertTrue(noValue.getMessage().contains("option 'journal' has no value"), noValue.getMessage());
    }

    /** Option names are case-insensitive to the driver, and stay so. */
    @Test
    void everyDocumentedOptionIsAcceptedInAnyCase() throws Throwable {
        List<String> wrong = new ArrayList<>();
        String log = stderrOf(() -> {
            for (String name : DOCUMENTED) {
                for (String spelt : new String[]{name, name.toLowerCase(Locale.ROOT), name.toUpperCase(Locale.ROOT)}) {
                    String uri = "mongodb://u:p@localhost:1/db?" + spelt + "=1";
                    try {
                        Lockers.check(uri, CONFIG);
                    } catch (IllegalArgumentException e) {
                        // the driver may refuse the value 1 (or the option without its companions): not the name
                        if (e.getMessage().contains("unknown option")) {
                            wrong.add(spelt + ": " + e.getMessage());
                        }
                    }
                }
            }
        });
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
        assertFalse(log.contains("unsupported option"), log);
        MongoLockerProvider.Parsed p = MongoLockerProvider.parse("mongodb://h/db?REPLICASET=rs0&AppName=me&W=majority"
                + "&wtimeoutms=100&Journal=true&lockerCOLLECTION=x&expiry=5s");
        assertEquals("mongodb://h/db?REPLICASET=rs0&AppName=me&W=majority&wtimeoutms=100&Journal=true", p.driverUri());
    }

    /** The driver's own set, read from it; its copy in Locker is whole (so it serves should the reading fail). */
    @Test
    void theDriversOptionsAreReadFromTheDriverAndTheBuiltInSetIsTheSame() {
        assertEquals("driver", DriverOptions.SOURCE);
        assertEquals(DriverOptions.BUILT_IN, DriverOptions.fromDriver(), "the driver's options changed: update BUILT_IN");
        for (String name : DOCUMENTED) {
            assertTrue(DriverOptions.BUILT_IN.contains(name.toLowerCase(Locale.ROOT)), name);
            assertTrue(DriverOptions.known(name) && DriverOptions.known(name.toUpperCase(Locale.ROOT)), name);
        }
        assertTrue(DriverOptions.known("wtimeout") && DriverOptions.known("J"), "legacy names the driver still reads");
        assertFalse(DriverOptions.known("foo") || DriverOptions.known("lockerCollection") || DriverOptions.known("expiry"));
    }

    /** Whatever shows a mongodb:// URI masks the same: Lockers.redact asks this backend. */
    @Test
    void lockersRedactKnowsTheDriversOptions() {
        assertEquals("mongodb://h/db?authMechanismProperties=***&w=1",
                Lockers.redact("mongodb://h/db?authMechanismProperties=AWS_SESSION_TOKEN:ab&cd=1&w=1"));
        assertEquals("mongodb://h/db?authMechanismProperties=***;W=1&lockerCollection=c",
                Lockers.redact("mongodb://h/db?authMechanismProperties=AWS_SESSION_TOKEN:ab;cd=1;W=1&lockerCollection=c"));
    }

    /** The builder's connection string meets the same gate: the driver never logs an option it does not know. */
    @Test
    void theBuildersConnectionStringIsCheckedToo() throws Throwable {
        IllegalArgumentException[] e = new IllegalArgumentException[2];
        String log = stderrOf(() -> {
            e[0] = assertThrows(IllegalArgumentException.class,
                    () -> MongoLocker.builder().connectionString("mongodb://localhost:1/db?w=1&foo=1").build());
            e[1] = assertThrows(IllegalArgumentException.class, () -> MongoLocker.builder()
                    .connectionString("mongodb://localhost:1/db?authMechanismProperties=AWS_SESSION_TOKEN:Pw0a&Pw0b").build());
        });
        assertTrue(e[0].getMessage().contains("unknown option 'foo'"), e[0].getMessage());
        for (Throwable t = e[1]; t != null; t = t.getCause()) {
            assertFalse(String.valueOf(t.getMessage()).contains("Pw0"), t.toString());
        }
        assertEquals("", log);
    }
}
