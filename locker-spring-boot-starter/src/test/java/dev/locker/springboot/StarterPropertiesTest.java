package dev.locker.springboot;

import dev.locker.api.Locker;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

import java.time.Duration;

import static dev.locker.springboot.StarterApps.failedStart;
import static dev.locker.springboot.StarterApps.start;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a start binds from the locker.* properties, and how a bad one fails: clearly, never with the password. */
class StarterPropertiesTest {

    /**
     * A bare number for a duration property (locker.expiry=300) is refused, as in the URI options. Spring's default
     * unit of milliseconds would otherwise give claims that end after 300 ms.
     */
    @Test
    void aBareNumberForADurationPropertyIsRefused() {
        // 300, not 30: mem:'s wait-and-read-back refuses an expiry under 2 x lockWait for its own reason
        String out = failedStart("locker.uri=mem:bare", "locker.expiry=300");
        assertTrue(out.contains("expiry"), out);
    }

    /**
     * A locker.uri with a mistyped scheme separator fails the start without the password in the exception or the log.
     */
    @Test
    void aMistypedUriDoesNotPutThePasswordInTheStartupFailure() {
        String out = failedStart("locker.uri=redis//app:S3cretPw99@127.0.0.1:6379");
        assertFalse(out.contains("S3cretPw99"), out);
        String slash = failedStart("locker.uri=redis:/app:S3cretPw98@127.0.0.1:6379");
        assertFalse(slash.contains("S3cretPw98"), slash);
    }

    @Test
    void aMissingBackendModuleFailsTheStartNamingTheModuleAndNotThePassword() {
        String out = failedStart("locker.uri=mongodb://app:S3cretPw99@db1:27017/?replicaSet=rs0");
        assertTrue(out.contains("mongodb") && out.contains("add dev.locker:locker-mongo"), out);
        assertFalse(out.contains("S3cretPw99"), out);
        String blank = failedStart("locker.uri=");
        assertTrue(blank.contains("must not be empty"), blank);
    }

    @Test
    void durationPropertiesWithAUnitAndInvalidValuesAreHandled() {
        try (ConfigurableApplicationContext app = start("locker.uri=mem:units", "locker.expiry=30s",
                "locker.local-wait=250ms")) {
            assertEquals(Duration.ofSeconds(30), app.getBean(Locker.class).config().expiry());
        }
        String negative = failedStart("locker.uri=mem:units", "locker.expiry=-5s");
        assertTrue(negative.contains("expiry"), negative);
    }
}
