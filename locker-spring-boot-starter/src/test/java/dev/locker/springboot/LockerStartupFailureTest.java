package dev.locker.springboot;

import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.FilteredClassLoader;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A start that cannot work fails with Spring Boot's failure report naming the property or driver to fix. */
class LockerStartupFailureTest {

    private static Throwable failedStart(String... properties) {
        return assertThrows(Throwable.class, () -> new SpringApplicationBuilder(LockerTestApplication.class)
                .web(WebApplicationType.NONE)
                .properties(properties)
                .run()
                .close());
    }

    @Test
    void anInlineCommentPastedAfterADurationFailsTheStartWithTheRemedy() {
        Throwable thrown = failedStart("locker.uri=mem:inline",
                "locker.expiry=30s            # and lock-wait, local-wait, retries");
        FailureAnalysis analysis = new LockerFailureAnalyzer().analyze(thrown);
        assertNotNull(analysis, thrown::toString);
        assertTrue(analysis.getDescription().contains("locker.expiry is '30s            # and lock-wait"),
                analysis::getDescription);
        assertTrue(analysis.getDescription().contains("inline comment"), analysis::getDescription);
        assertTrue(analysis.getAction().contains("line of its own"), analysis::getAction);
    }

    @Test
    void anInlineCommentAfterTheUriIsNamedWithoutShowingTheUri() {
        Throwable thrown = failedStart("locker.uri=redis://:s3cret@localhost:6379   # the shared redis");
        FailureAnalysis analysis = new LockerFailureAnalyzer().analyze(thrown);
        assertNotNull(analysis, thrown::toString);
        assertTrue(analysis.getDescription().contains("locker.uri holds an inline comment"), analysis::getDescription);
        assertFalse(analysis.getDescription().contains("s3cret"), analysis::getDescription);
    }

    @Test
    void aBareNumberDurationFailsTheStartNamingTheProperty() {
        FailureAnalysis analysis = new LockerFailureAnalyzer().analyze(
                failedStart("locker.uri=mem:bare", "locker.expiry=300"));
        assertNotNull(analysis);
        assertTrue(analysis.getDescription().contains("locker.expiry=300 has no unit"), analysis::getDescription);
    }

    @Test
    void aJedisWithoutRedisClientIsRefusedNamingTheVersionToPin() throws Exception {
        try (FilteredClassLoader olderJedis = new FilteredClassLoader(LockerStartupChecks.JEDIS_CLASS)) {
            LockerStartupException e = assertThrows(LockerStartupException.class,
                    () -> LockerStartupChecks.driverFor("redis://localhost:6379", olderJedis));
            assertTrue(e.action().contains("<jedis.version>8.0.2</jedis.version>"), e::action);
            LockerStartupChecks.driverFor("mem:any", olderJedis);
            LockerStartupChecks.driverFor("redis://localhost:6379", getClass().getClassLoader());
        }
    }

    @Test
    void aMissingJedisClassMetWhileStartingIsReportedWithTheVersionToPin() {
        Throwable failure = new BeanCreationException("locker",
                new NoClassDefFoundError("redis/clients/jedis/RedisClient"));
        FailureAnalysis analysis = new LockerFailureAnalyzer().analyze(failure);
        assertNotNull(analysis);
        assertTrue(analysis.getAction().contains("<jedis.version>8.0.2</jedis.version>"), analysis::getAction);
        assertNull(new LockerFailureAnalyzer().analyze(new NoClassDefFoundError("com/example/Other")));
    }
}
