package dev.locker.redis;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The restart guard's and the clock skew's bad values are refused before any I/O, naming them, never the secret. */
class RedisGuardOptionRefusalTest {

    private static final String SECRET = "s3cr3t-Pa55";

    /** Nothing listens on port 1: each refusal comes before any I/O. */
    @Test
    void badGuardAndSkewOptionsAreRefusedWithoutTheirSecret() {
        List<String> uris = List.of(
                "redis://app:" + SECRET + "@127.0.0.1:1?serverClockSkew=-1s",
                "redis://app:" + SECRET + "@127.0.0.1:1?serverClockSkew=soon",
                "redis://app:" + SECRET + "@127.0.0.1:1?expiry=4s&serverClockSkew=2s",
                "redis://app:" + SECRET + "@127.0.0.1:1?expiry=90s",
                "redis://app:" + SECRET + "@127.0.0.1:1?expiry=5s&restartGuard=4s",
                "redis://127.0.0.1:1?password=" + SECRET + "&restartGuard=-1s",
                "redis://127.0.0.1:1?password=" + SECRET + "&expiry=2m&restartGuard=1m");
        for (String uri : uris) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> RedisLocker.builder().uri(uri).build(), uri);
            assertFalse(e.getMessage().contains(SECRET), "the refusal shows the password: " + e.getMessage());
            assertTrue(e.getMessage().contains("serverClockSkew") || e.getMessage().contains("restartGuard"),
                    "the refusal names the option: " + e.getMessage());
        }
        IllegalArgumentException built = assertThrows(IllegalArgumentException.class, () -> RedisLocker.builder()
                .node("127.0.0.1", 1).password(SECRET).serverClockSkew(Duration.ofSeconds(30)).build());
        assertFalse(built.getMessage().contains(SECRET), built.getMessage());
        assertTrue(built.getMessage().contains("serverClockSkew"), built.getMessage());
    }
}
