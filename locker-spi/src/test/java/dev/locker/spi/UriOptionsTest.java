package dev.locker.spi;

import dev.locker.api.LockerConfig;
import dev.locker.api.OptionSyntax;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class UriOptionsTest {

    @Test
    void uriOptionsApplyCommonSettingsAndRefuseUnknownOnes() {
        UriOptions o = UriOptions.parse("redis://u:secret@h:6379/0?expiry=30s&lockWait=250ms&retries=5&why=nightly%20job");
        LockerConfig c = o.applyTo(LockerConfig.defaults());
        assertEquals(Duration.ofSeconds(30), c.expiry());
        assertEquals(Duration.ofMillis(250), c.lockWait());
        assertEquals(5, c.retries());
        assertEquals("nightly job", c.why());
        assertEquals("redis://u:secret@h:6379/0", o.base());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> UriOptions.parse("redis://u:secret@h?expirry=1s").requireKnown(java.util.Set.of("prefix")));
        assertTrue(e.getMessage().contains("expirry"), e.getMessage());
        assertFalse(e.getMessage().contains("secret"), "passwords are redacted: " + e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> UriOptions.parse("mem:?expiry=soon").applyTo(LockerConfig.defaults()));
        assertThrows(IllegalArgumentException.class, () -> UriOptions.parse("mem:?expiry=-1s").applyTo(LockerConfig.defaults()));
        assertEquals(Duration.ofMinutes(2), UriOptions.duration("d", "PT2M"));
    }

    @Test
    void aDurationWithoutAUnitIsRefusedNamingTheAcceptedForms() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> UriOptions.parse("redis://u:secret@h?expiry=30").applyTo(LockerConfig.defaults()));
        assertTrue(e.getMessage().contains("expiry=30"), e.getMessage());
        assertTrue(e.getMessage().contains("30s") && e.getMessage().contains("30ms"), "names the forms: " + e.getMessage());
        assertFalse(e.getMessage().contains("secret"), e.getMessage());
        assertEquals(Duration.ZERO, UriOptions.duration("restartGuard", "0"), "0 needs no unit");
        assertEquals(Duration.ofMillis(30), UriOptions.duration("d", "30ms"));
        assertEquals(Duration.ofSeconds(30), UriOptions.duration("d", " 30S "));
        assertThrows(IllegalArgumentException.class, () -> UriOptions.duration("d", ""));
        assertThrows(IllegalArgumentException.class, () -> UriOptions.duration("d", "s"));
        assertThrows(IllegalArgumentException.class, () -> UriOptions.duration("d", "-5s"));
    }

    /** A backend option that is secret, with a raw '&' in its value: what follows is neither shown nor named. */
    @Test
    void anUnknownOptionAfterASecretOptionIsNotNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> UriOptions.parse("x://h/t?password=Pw0a&Pw0b=1&expiry=1s").requireKnown(Set.of("password")));
        assertEquals("an unknown option follows the secret option 'password', so it may be part of that secret and is "
                + "not named: an '&' inside a secret must be percent-encoded as %26 in locker URI "
                + "x://h/t?password=***&expiry=1s; common options: [expiry, localWait, lockWait, maxKeyBytes, retries, "
                + "rid, why], backend options: [password]", e.getMessage());
        IllegalArgumentException named = assertThrows(IllegalArgumentException.class,
                () -> UriOptions.parse("x://h/t?password=Pw0a&expiry=1s&expirry=1s").requireKnown(Set.of("password")));
        assertTrue(named.getMessage().startsWith("unknown option 'expirry' in locker URI x://h/t?password=***&expiry=1s&expirry=1s"),
                named.getMessage());
        IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
                () -> UriOptions.parse("x://h/t?token=Pw0a&Pw0b=1&Pw0b=2"));
        assertTrue(twice.getMessage().startsWith("an option given twice follows the secret option 'token'"), twice.getMessage());
        assertFalse(twice.getMessage().contains("Pw0"), twice.getMessage());
        IllegalArgumentException twiceNamed = assertThrows(IllegalArgumentException.class,
                () -> UriOptions.parse("x://h/t?token=Pw0a&expiry=1s&expiry=2s"));
        assertTrue(twiceNamed.getMessage().startsWith("option 'expiry' is given twice"), twiceNamed.getMessage());
        assertFalse(twiceNamed.getMessage().contains("Pw0"), twiceNamed.getMessage());
    }

    @Test
    void theSyntaxOfTheseUrisSplitsAtAmpersandOnlyAndDecodesNames() {
        OptionSyntax syntax = UriOptions.syntax(Set.of("wallClock"));
        assertTrue(syntax.startsKnownOption('&', "wallClock"));
        assertTrue(syntax.startsKnownOption('&', "expir%79"));
        assertFalse(syntax.startsKnownOption(';', "expiry"));
        assertFalse(syntax.startsKnownOption('&', "wallclock"));
        assertEquals("file:/d?token=***&expiry=1s", syntax.redact("file:/d?token=a&b=c;expiry=2s&expiry=1s"));
        assertEquals("unknown option 'b'", UriOptions.unknownOption("file:/d?token=a&expiry=1s&b=c", "b", syntax));
    }

    @Test
    void aMalformedEscapeIsRefusedWithoutQuotingIt() {
        for (String uri : new String[]{"x://h?token=Pw0%Zq", "x://h?expiry=1s&token=Pw0%Zq", "x://h?password=a&Pw0%Zq=1"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> UriOptions.parse(uri), uri);
            for (Throwable t = e; t != null; t = t.getCause()) {
                assertFalse(t.getMessage().contains("Zq") || t.getMessage().contains("Pw0"), uri + ": " + t);
            }
        }
        IllegalArgumentException named = assertThrows(IllegalArgumentException.class, () -> UriOptions.parse("x://h?why=a%Zq"));
        assertEquals("a malformed percent-escape in option 'why' (write a '%' itself as %25) in locker URI x://h?why=a%Zq",
                named.getMessage());
        assertEquals(java.util.Optional.empty(), UriOptions.percentDecoded("a%Zq", true));
        assertEquals(java.util.Optional.of("a b+c"), UriOptions.percentDecoded("a+b%2Bc", true));
        assertEquals(java.util.Optional.of("a+b+c"), UriOptions.percentDecoded("a+b%2Bc", false));
    }
}
