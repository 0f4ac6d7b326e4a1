package dev.locker.api;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Redaction with a backend's {@link OptionSyntax}: a raw '&' (or a separator the backend does not split at) inside a
 * secret option's value makes the rest of the secret look like options; those the backend does not know are masked
 * with the secret, those it knows end it.
 */
class RedactSyntaxTest {

    /** Like Redis: splits at '&' only, knows these names. */
    private static final OptionSyntax SYNTAX = (separator, name) -> separator == '&'
            && Set.of("password", "truststorePassword", "prefix", "expiry").contains(name);

    /** URI, its redacted form with {@link #SYNTAX}. Every piece of a secret in this table contains "Pw0". */
    private static final String[][] MASKED = {
            {"redis://localhost:1?password=Pw0a&Pw0b=Pw0c&expiry=1s", "redis://localhost:1?password=***&expiry=1s"},
            {"redis://localhost:1?password=Pw0a&Pw0b=1", "redis://localhost:1?password=***"},
            // several unknown ones in a row, up to the next known one
            {"redis://h?password=Pw0a&Pw0b=1&Pw0c=2&prefix=p", "redis://h?password=***&prefix=p"},
            // a separator the backend does not split at continues the value, whatever name follows
            {"redis://h?password=Pw0a;expiry=Pw0b&prefix=p", "redis://h?password=***&prefix=p"},
            {"redis://h?password=Pw0a?expiry=Pw0b&prefix=p", "redis://h?password=***&prefix=p"},
            // an empty name, a name the backend would decode to something else
            {"redis://h?password=Pw0a&=Pw0b&expiry=1s", "redis://h?password=***&expiry=1s"},
            {"redis://h?password=Pw0a&expir%79=Pw0b", "redis://h?password=***"},
            // a secret after a secret: each masked, the unknown one after the second one with it
            {"redis://h?password=Pw0a&truststorePassword=Pw0b&Pw0c=1&prefix=x",
                    "redis://h?password=***&truststorePassword=***&prefix=x"},
            // a secret option the backend does not know takes in what follows just the same
            {"redis://h?prefix=p&apiToken=Pw0a&Pw0b=1&expiry=1s", "redis://h?prefix=p&apiToken=***&expiry=1s"},
            {"redis://u:Pw0a@h?password=Pw0b&Pw0c=1", "redis://u:***@h?password=***"},
    };

    /** Unknown options after no secret, and known ones after a secret, stay as they are. */
    private static final String[][] SHOWN = {
            {"redis://h?prefix=p&cd=1&expiry=1s", "redis://h?prefix=p&cd=1&expiry=1s"},
            {"redis://h?password=Pw0a&expiry=1s&cd=1", "redis://h?password=***&expiry=1s&cd=1"},
            {"redis://h?cd=1&password=Pw0a", "redis://h?cd=1&password=***"},
    };

    @Test
    void whatFollowsASecretIsMaskedWithItUpToAKnownOption() {
        List<String> wrong = new ArrayList<>();
        for (String[][] table : new String[][][]{MASKED, SHOWN}) {
            for (String[] row : table) {
                String got = SYNTAX.redact(row[0]);
                if (!got.equals(row[1]) || got.contains("Pw0")) {
                    wrong.add(row[0] + " -> " + got + " (expected " + row[1] + ")");
                }
                for (String secret : SYNTAX.secrets(row[0])) {
                    if (got.contains(secret) && secret.length() > 3) {
                        wrong.add(row[0] + ": secret " + secret + " shown in " + got);
                    }
                }
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
    }

    @Test
    void secretsListTheWholeMaskedRangeAndEachPieceOfIt() {
        List<String> s = SYNTAX.secrets("redis://h?password=Pw0a&Pw0b=Pw0c%21&expiry=1s");
        assertTrue(s.containsAll(List.of("Pw0a&Pw0b=Pw0c%21", "Pw0a&Pw0b=Pw0c!", "Pw0a", "Pw0b=Pw0c%21", "Pw0b",
                "Pw0c%21", "Pw0c!")), s.toString());
        assertFalse(s.contains("expiry") || s.contains("1s"), s.toString());
        for (int i = 1; i < s.size(); i++) {
            assertTrue(s.get(i - 1).length() >= s.get(i).length(), s.toString());
        }
    }

    @Test
    void theSyntaxesAtEitherEnd() {
        String uri = "redis://h?password=Pw0a&Pw0b=1&expiry=1s";
        assertEquals("redis://h?password=***&Pw0b=1&expiry=1s", OptionSyntax.ANY.redact(uri), "as without a backend");
        assertEquals(Lockers.redact(uri), OptionSyntax.ANY.redact(uri), "no backend serves redis: here");
        assertEquals("redis://h?password=***", OptionSyntax.NONE.redact(uri));
        assertEquals("redis://h?password=***", ((OptionSyntax) (sep, name) -> {
            throw new IllegalStateException("a broken syntax masks more");
        }).redact(uri));
        for (String[] row : RedactTest.masked()) {
            assertEquals(Lockers.redact(row[0]), OptionSyntax.ANY.redact(row[0]));
        }
    }

    @Test
    void anOptionHiddenByASecretIsOneAMessageMustNotName() {
        String uri = "redis://localhost:1?password=ab&cd=ef&expiry=1s";
        assertEquals(Optional.of("the secret option 'password'"), SYNTAX.secretHiding(uri, "cd"));
        assertEquals(Optional.empty(), SYNTAX.secretHiding(uri, "expiry"));
        assertEquals(Optional.of("the secret option 'password'"), SYNTAX.secretHiding("redis://h?password=ab&cd", "cd"),
                "an option without a value is part of the secret's value to begin with");
        assertEquals(Optional.of("the secret option 'truststorePassword'"),
                SYNTAX.secretHiding("redis://h?password=a&truststorePassword=b&cd=1", "cd"));
        assertEquals(Optional.empty(), SYNTAX.secretHiding("redis://h?prefix=p&cd=1", "cd"), "no secret before it");
        assertEquals(Optional.empty(), SYNTAX.secretHiding("redis://h?cd=1&password=ab&cd=2", "cd"),
                "shown anyway, before the secret");
        assertEquals(Optional.empty(), SYNTAX.secretHiding("redis://h?why=x&cd&expiry=1s", "cd"));
        assertEquals(Optional.of("the password of the user info"),
                SYNTAX.secretHiding("mongodb://u:ab?cd=1@h/db", "cd"));
        assertEquals(Optional.empty(), SYNTAX.secretHiding("mongodb://h/db?cd=1", "cd"), "no secret at all");
    }
}
