package dev.locker.api;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The one URI redactor: a table of URIs, what they must show and what they must never show. */
class RedactTest {

    /** URI, its redacted form. Every secret in this table contains "Pw0". */
    private static final String[][] MASKED = {
            // a '/' in the password (base64 secrets), with a bad port after it
            {"redis://default:Pw0/Sec+ret=@127.0.0.1:notaport", "redis://default:***@127.0.0.1:notaport"},
            // an '@' in the password: the user info ends at the last '@'
            {"redis://default:Pw0Sec@ret@127.0.0.1:notaport", "redis://default:***@127.0.0.1:notaport"},
            {"mongodb://user:Pw0/Sec+ret=@127.0.0.1:notaport/db", "mongodb://user:***@127.0.0.1:notaport/db"},
            // a ':' in the password: masked from the FIRST ':' of the user info
            {"nosuch://user:Pw0:Secret@host/", "nosuch://user:***@host/"},
            // '?' and '#' in the password
            {"redis://u:Pw0?x=1@h:6379/0", "redis://u:***@h:6379/0"},
            {"redis://u:Pw0#frag@h:6379", "redis://u:***@h:6379"},
            {"redis://:Pw0@h", "redis://:***@h"},
            {"redis://locker:Pw0%40x@10.0.0.5:6379/2?prefix=app:", "redis://locker:***@10.0.0.5:6379/2?prefix=app:"},
            // secret options, any case, percent-encoded name, several separators
            {"redis://127.0.0.1:6379/0?password=Pw0Secret&expiry=banana", "redis://127.0.0.1:6379/0?password=***&expiry=banana"},
            {"rediss://h:6379?truststore=/t.p12&truststorePassword=Pw0a&PASSWORD=Pw0b&timeout=2s",
                    "rediss://h:6379?truststore=/t.p12&truststorePassword=***&PASSWORD=***&timeout=2s"},
            {"x://h?pass%77ord=Pw0", "x://h?pass%77ord=***"},
            {"x://h/?a=1;clientSecret=Pw0;b=2", "x://h/?a=1;clientSecret=***;b=2"},
            {"x://h/?apiToken=Pw0&sessionToken=Pw0x", "x://h/?apiToken=***&sessionToken=***"},
            {"mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:Pw0tok",
                    "mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=***"},
            // a '?' inside another option's value does not hide a secret option behind it
            {"x://h?why=a?password=Pw0", "x://h?why=a?password=***"},
            // both at once, and an '@' in a query value: masking too much is fine
            {"mongodb://user:Pw0@h1,h2/db?replicaSet=rs&appName=me@host&password=Pw0b", "mongodb://user:***@host&password=***"},
            {"redis://h:6379?why=ops@corp&password=Pw0", "redis://h:***@corp&password=***"},
            // no "//": the password may start at the first ':'
            {"foo:user:Pw0@h", "foo:***@h"},
            {"user:Pw0@host", "user:***@host"},
    };

    /** URIs without secrets stay as they are. */
    private static final String[] READABLE = {
            "redis://host:6379/0?prefix=a:",
            "mongodb://h1,h2/db?replicaSet=rs",
            "hbase://zk1:2181,zk2:2181/ns",
            "mem:x",
            "mem:x?expiry=banana",
            "file:/tmp/d",
            "file:///tmp/d?wallClock=true",
            "redis://user@host:6379",
            "rediss://h:6379?truststore=/t.p12&keyPrefix=k&timeout=2s",
            "mongodb://h/db?lockerCollection=locks&w=majority",
            "no-scheme",
            "",
    };

    /** The table of masked URIs, for other tests. */
    static String[][] masked() {
        return MASKED.clone();
    }

    @Test
    void secretsAreMaskedWhateverTheyContain() {
        List<String> wrong = new ArrayList<>();
        for (String[] row : MASKED) {
            String got = Lockers.redact(row[0]);
            if (!got.equals(row[1]) || got.contains("Pw0")) {
                wrong.add(row[0] + " -> " + got + " (expected " + row[1] + ")");
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
    }

    @Test
    void urisWithoutSecretsStayReadable() {
        for (String uri : READABLE) {
            assertEquals(uri, Lockers.redact(uri));
            assertTrue(Lockers.secrets(uri).isEmpty(), uri);
        }
    }

    @Test
    void nullInNullOut() {
        assertNull(Lockers.redact(null));
        assertTrue(Lockers.secrets(null).isEmpty());
    }

    @Test
    void secretsListsWhatIsMaskedRawAndDecodedLongestFirst() {
        List<String> s = Lockers.secrets("redis://locker:pw%40xyz@h:1?keystorePassword=k3y+store");
        assertTrue(s.containsAll(List.of("pw%40xyz", "pw@xyz", "k3y+store", "k3y store")), s.toString());
        for (int i = 1; i < s.size(); i++) {
            assertTrue(s.get(i - 1).length() >= s.get(i).length(), s.toString());
        }
        for (String[] row : MASKED) {
            String redacted = Lockers.redact(row[0]);
            for (String secret : Lockers.secrets(row[0])) {
                assertFalse(redacted.contains(secret) && secret.length() > 3, row[0] + ": " + secret);
            }
        }
    }
}
