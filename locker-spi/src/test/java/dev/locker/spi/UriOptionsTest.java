package dev.locker.spi;

import dev.locker.api.LockerConfig;
import org.junit.jupiter.api.Test;

import java.time.Duration;

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
}
