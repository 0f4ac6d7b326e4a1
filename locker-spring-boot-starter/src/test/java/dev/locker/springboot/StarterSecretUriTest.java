package dev.locker.springboot;

import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A {@code locker.uri} whose secret option holds a raw '&amp;': the failed start (its exception chain and Spring's
 * "Application run failed" log) says what is wrong and holds no piece of the secret. Every piece contains "Pw0".
 */
class StarterSecretUriTest {

    /** Everything a failed start says: the exception chain's messages and what was logged on stderr meanwhile. */
    private static String failedStart(String... properties) {
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        Throwable thrown;
        try {
            thrown = assertThrows(Throwable.class, () -> new SpringApplicationBuilder(LockerTestApplication.class)
                    .web(WebApplicationType.NONE).properties(properties).run().close());
        } finally {
            System.setErr(err);
        }
        StringBuilder all = new StringBuilder(captured.toString(StandardCharsets.UTF_8));
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            all.append('\n').append(t);
        }
        return all.toString();
    }

    @Test
    void anUnknownOptionAfterASecretFailsTheStartWithoutShowingIt() {
        String redis = failedStart("locker.uri=redis://127.0.0.1:1?password=Pw0a&Pw0b=Pw0c&expiry=1s");
        assertTrue(redis.contains("redis://127.0.0.1:1?password=***&expiry=1s")
                && redis.contains("an unknown option follows the secret option 'password'"), redis);
        assertFalse(redis.contains("Pw0"), redis);
        String mem = failedStart("locker.uri=mem:starter-secret?token=Pw0a&Pw0b=1&Pw0b=2");
        assertTrue(mem.contains("an option given twice follows the secret option 'token'"), mem);
        assertFalse(mem.contains("Pw0"), mem);
        String escape = failedStart("locker.uri=redis://127.0.0.1:1?password=Pw0a%Zq");
        assertTrue(escape.contains("malformed percent-escape in option 'password'"), escape);
        assertFalse(escape.contains("Pw0") || escape.contains("Zq"), escape);
    }
}
