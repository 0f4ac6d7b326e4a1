package dev.locker.redis;

import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** URI parsing: no server needed, nothing is connected (the builder is only described, never built). */
class RedisUriTest {

    private static RedisLockerBuilder parse(String uri) {
        return RedisLocker.builder().uri(uri);
    }

    @Test
    void hostPortDatabaseAndCredentials() {
        assertEquals("Redis redis://localhost:6379", parse("redis://localhost").describe());
        assertEquals("Redis redis://cache.example:6380/3", parse("redis://cache.example:6380/3").describe());
        assertEquals("Redis rediss://app@cache.example:6379", parse("rediss://app:p%40ss@cache.example").describe());
        String v6 = parse("redis://[::1]:7000").describe();
        assertTrue(v6.contains("::1") && v6.endsWith(":7000"), v6);
        assertEquals("Redis redis://h1:7000,h2:7001 (cluster)", parse("redis://h1:7000,h2:7001").describe());
        assertEquals("Redis redis://h1:7000 (cluster)", parse("redis://h1:7000?cluster=true").describe());
    }

    @Test
    void optionsReachTheLockerConfig() {
        RedisLockerBuilder b = parse("redis://h?expiry=45s&retries=5&localWait=250ms&why=cron&rid=node-1"
                + "&maxKeyBytes=100");
        LockerConfig c = LockerConfig.builder().expiry(Duration.ofSeconds(10)).build();
        b.config(c);
        // build() would connect lazily only; use the same override path without a client
        LockerConfig merged = b.mergedConfig();
        assertEquals(Duration.ofSeconds(45), merged.expiry());
        assertEquals(5, merged.retries());
        assertEquals(Duration.ofMillis(250), merged.localWait());
        assertEquals("cron", merged.why());
        assertEquals("node-1", merged.ridName());
        assertEquals(100, merged.maxKeyBytes());
    }

    /** Nothing listens on port 1: each refusal comes before any I/O, and names its duration. */
    @Test
    void durationsOverACenturyAreRefusedBeforeAnyIo() {
        Duration century = LockerConfig.MAX_EXPIRY;
        Duration tooLong = century.plusDays(1);
        IllegalArgumentException expiry = assertThrows(IllegalArgumentException.class,
                () -> parse("redis://127.0.0.1:1?expiry=" + tooLong).build());
        assertTrue(expiry.getMessage().contains("expiry must be at most 100 years"), expiry.getMessage());
        IllegalArgumentException guard = assertThrows(IllegalArgumentException.class,
                () -> parse("redis://127.0.0.1:1").restartGuard(tooLong).build());
        assertTrue(guard.getMessage().contains("restartGuard must be at most 100 years"), guard.getMessage());
        IllegalArgumentException tombstone = assertThrows(IllegalArgumentException.class,
                () -> parse("redis://127.0.0.1:1").tombstoneTtl(Duration.ofSeconds(Long.MAX_VALUE)).build());
        assertTrue(tombstone.getMessage().contains("tombstoneTtl must be at most 100 years"), tombstone.getMessage());
        try (RedisLocker longest = parse("redis://127.0.0.1:1?expiry=" + century).restartGuard(century)
                .tombstoneTtl(century).build()) {
            assertEquals(century, longest.config().expiry(), "100 years is allowed (the client connects lazily)");
        }
    }

    @Test
    void durationsInSeveralSpellings() {
        assertEquals(Duration.ofMillis(250), RedisUri.duration("u", "t", "250ms"));
        assertThrows(IllegalArgumentException.class, () -> RedisUri.duration("u", "t", "250"), "a unit is required");
        assertEquals(Duration.ZERO, RedisUri.duration("u", "t", "0"));
        assertEquals(Duration.ofSeconds(2), RedisUri.duration("u", "t", "2s"));
        assertEquals(Duration.ofMinutes(1), RedisUri.duration("u", "t", "1m"));
        assertEquals(Duration.ofSeconds(90), RedisUri.duration("u", "t", "PT1M30S"));
        assertThrows(IllegalArgumentException.class, () -> RedisUri.duration("u", "t", "soon"));
    }

    @Test
    void mistakesAreNamedAndPasswordsAreNotShown() {
        IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
                () -> parse("redis://u:hunter2@h?timeot=1s"));
        assertTrue(unknown.getMessage().contains("timeot"), unknown.getMessage());
        assertFalse(unknown.getMessage().contains("hunter2"), unknown.getMessage());
        IllegalArgumentException pw = assertThrows(IllegalArgumentException.class,
                () -> parse("redis://h?password=hunter2&poolSize=x"));
        assertFalse(pw.getMessage().contains("hunter2"), pw.getMessage());
        assertThrows(IllegalArgumentException.class, () -> parse("http://h"));
        assertThrows(IllegalArgumentException.class, () -> parse("redis://"));
        assertThrows(IllegalArgumentException.class, () -> parse("redis://h:notaport"));
        assertThrows(IllegalArgumentException.class, () -> parse("redis://h:70000"));
        assertThrows(IllegalArgumentException.class, () -> parse("redis://h/notadb"));
        assertThrows(IllegalArgumentException.class, () -> parse("redis://h?prefix=a{b}"));
        assertThrows(IllegalArgumentException.class, () -> parse("redis://h?replicas=-1"));
        assertThrows(IllegalArgumentException.class, () -> parse("redis://h?cluster=maybe"));
        assertThrows(IllegalArgumentException.class, () -> parse("redis://h?tombstoneTtl=0"));
        parse("redis://h?tombstoneTtl=1h&evictionCheck=WARN&evictionCheck=off");
        IllegalArgumentException evict = assertThrows(IllegalArgumentException.class,
                () -> parse("redis://h?evictionCheck=ignore"));
        assertTrue(evict.getMessage().contains("fail, warn or off"), evict.getMessage());
        assertThrows(IllegalArgumentException.class, () -> parse("redis://h1,h2/2").build());
    }

    @Test
    void passwordsWithUnencodedSeparatorsAreNotShownEvenInPart() {
        for (String uri : new String[]{"redis://default:Pw0/Sec+ret=@127.0.0.1:notaport",
                "redis://default:Pw0Sec@ret@127.0.0.1:notaport", "redis://u:Pw0?x=1@h:6379/0",
                "redis://u:Pw0#x@h:notaport", "redis://u:Pw0:x@h:notaport"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> parse(uri), uri);
            assertFalse(e.getMessage().contains("Pw0"), e.getMessage());
        }
        IllegalArgumentException slash = assertThrows(IllegalArgumentException.class,
                () -> parse("redis://default:Pw0/Sec+ret=@127.0.0.1:6379"));
        assertTrue(slash.getMessage().contains("%2F"), "says how to write it: " + slash.getMessage());
    }

    /**
     * A raw '&' inside a secret option's value splits the secret: what follows looks like an option, unknown here.
     * Its segment may be the rest of the secret, so the message neither shows it in the URI nor names it.
     */
    @Test
    void anUnknownOptionAfterASecretIsNeitherShownNorNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> parse("redis://localhost:1?password=ab&cd=ef&expiry=1s"));
        assertTrue(e.getMessage().startsWith("bad Redis URI 'redis://localhost:1?password=***&expiry=1s': an unknown "
                + "option follows the secret option 'password'"), e.getMessage());
        assertTrue(e.getMessage().contains("%26"), "says how to write an '&' in a secret: " + e.getMessage());
        assertFalse(e.getMessage().contains("cd"), e.getMessage());
        for (String uri : new String[]{"redis://localhost:1?password=ab&cd=1",
                "redis://h?password=Pw0a&Pw0b=Pw0c&expiry=1s", "redis://h?password=Pw0a&Pw0b=Pw0c&Pw0d=Pw0e",
                "redis://h?password=Pw0a&Pw0b", "redis://h?password=Pw0a&=Pw0b", "redis://h?password=Pw0a;Pw0b=1&Pw0c=1",
                "redis://h?keystorePassword=Pw0a&Pw0b=1", "redis://h?prefix=p&truststorePassword=Pw0a&Pw0b=1&timeout=2s",
                "redis://h?password=Pw0a&Pw0b%3D=1", "redis://u:Pw0a@h?password=Pw0a&cd=Pw0c"}) {
            IllegalArgumentException leak = assertThrows(IllegalArgumentException.class, () -> parse(uri), uri);
            assertFalse(leak.getMessage().contains("Pw0") || leak.getMessage().contains("cd"), leak.getMessage());
        }
    }

    /** Lockers.redact, used by every module that shows a URI, masks the same: it asks the backend of the scheme. */
    @Test
    void lockersRedactKnowsTheRedisOptions() {
        String uri = "redis://localhost:1?password=ab&cd=ef&expiry=1s";
        assertEquals("redis://localhost:1?password=***&expiry=1s", Lockers.redact(uri));
        assertTrue(Lockers.secrets(uri).containsAll(java.util.List.of("ab&cd=ef", "cd=ef", "ab")),
                Lockers.secrets(uri).toString());
        assertEquals("rediss://h?password=***&prefix=p;x", Lockers.redact("rediss://h?password=ab;cd=ef&prefix=p;x"),
                "a ';' is no separator to Redis: part of the value before it");
        assertEquals("redis://h?password=***&prefix=p&cd=1", Lockers.redact("redis://h?password=ab&prefix=p&cd=1"));
    }

    /** An unknown option that follows no secret is still named: that message is what finds a typo. */
    @Test
    void anUnknownOptionAfterAnOrdinaryOneIsNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> parse("redis://u:Pw0@h?password=Pw0b&prefix=p&timeot=1s"));
        assertTrue(e.getMessage().contains("unknown option 'timeot'"), e.getMessage());
        assertTrue(e.getMessage().contains("?password=***&prefix=p&timeot=1s"), e.getMessage());
        assertFalse(e.getMessage().contains("Pw0"), e.getMessage());
    }

    /** URLDecoder's message quotes the two characters after a bad '%': a piece of the password, it is not passed on. */
    @Test
    void aMalformedEscapeInASecretIsNotQuoted() {
        for (String uri : new String[]{"redis://h?password=Pw0%Zqa", "redis://u:Pw0%Zqa@h", "redis://:Pw0%Zq@h",
                "redis://h?truststore=/t.p12&truststorePassword=Pw0%Zq", "redis://h?password=a&Pw0%Zq=1"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> parse(uri), uri);
            for (Throwable t = e; t != null; t = t.getCause()) {
                assertFalse(t.getMessage().contains("Zq") || t.getMessage().contains("Pw0"), uri + ": " + t);
            }
            assertTrue(e.getMessage().contains("%25"), "says how to write a '%': " + e.getMessage());
        }
        IllegalArgumentException named = assertThrows(IllegalArgumentException.class, () -> parse("redis://h?prefix=a%Zq"));
        assertTrue(named.getMessage().contains("malformed percent-escape in option 'prefix'"), named.getMessage());
    }
}
