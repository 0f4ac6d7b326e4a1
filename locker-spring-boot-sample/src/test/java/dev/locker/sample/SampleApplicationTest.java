package dev.locker.sample;

import com.fasterxml.jackson.databind.JsonNode;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.client.TestRestTemplate;
import org.springframework.http.ResponseEntity;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The sample, built on spring-boot-starter-parent with the documented properties, serves reports and the actuator. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@DirtiesContext
class SampleApplicationTest {

    private static RedisServer redis;

    @Autowired
    private TestRestTemplate http;

    @Autowired
    private Locker locker;

    /** The documented {@code locker.uri} names localhost:6379; the test points it at a throw-away redis-server. */
    @DynamicPropertySource
    static void redisUri(DynamicPropertyRegistry registry) {
        registry.add("locker.uri", () -> {
            if (redis == null) {
                redis = RedisServer.start(); // stopped by its own shutdown hook, after the context closes
            }
            return redis.uri();
        });
    }

    @Test
    void healthShowsTheLockerUpOnRedis() {
        ResponseEntity<JsonNode> health = http.getForEntity("/actuator/health", JsonNode.class);
        assertEquals(200, health.getStatusCode().value(), () -> String.valueOf(health.getBody()));
        JsonNode component = health.getBody().path("components").path("locker");
        assertEquals("UP", component.path("status").asText(), health.getBody()::toString);
        assertEquals("redis", component.path("details").path("backend").asText());
    }

    @Test
    void aReportRunsUnderItsLockWithAFencingToken() {
        ResponseEntity<JsonNode> first = http.postForEntity("/reports/monthly", null, JsonNode.class);
        ResponseEntity<JsonNode> second = http.postForEntity("/reports/monthly", null, JsonNode.class);
        assertEquals(200, first.getStatusCode().value(), () -> String.valueOf(first.getBody()));
        assertEquals("monthly", first.getBody().path("report").asText());
        assertTrue(second.getBody().path("fencingToken").asLong() > first.getBody().path("fencingToken").asLong(),
                () -> first.getBody() + " then " + second.getBody());
    }

    @Test
    void theLocksEndpointListsAHeldLockWithItsHolder() {
        try (Lease lease = locker.acquire(KeyColumn.of("reports:yearly", "run"), "yearly report")) {
            ResponseEntity<JsonNode> page = http.getForEntity("/actuator/locks?prefix=reports:", JsonNode.class);
            assertEquals(200, page.getStatusCode().value(), () -> String.valueOf(page.getBody()));
            JsonNode locks = page.getBody().path("locks");
            assertEquals(1, locks.size(), page.getBody()::toString);
            assertEquals("reports:yearly", locks.get(0).path("key").asText());
            assertEquals(lease.fencingToken(), locks.get(0).path("fencingToken").asLong());
            JsonNode holder = locks.get(0).path("holder");
            assertEquals(locker.rid(), holder.path("rid").asText());
            assertTrue(holder.path("rid").asText().startsWith("locker-sample-"), holder::toString);
            assertEquals("yearly report", holder.path("why").asText());
        }
    }

    @Test
    void badLocksQueriesAnswer400WithTheReason() {
        assertBadRequest("limit=0", "limit must be a whole number from 1 to 1000, not '0'");
        assertBadRequest("limit=abc", "limit must be a whole number from 1 to 1000, not 'abc'");
        assertBadRequest("cursor=no-such-cursor", "cursor 'no-such-cursor' was not issued by");
        assertBadRequest("limit=1001", "limit must be a whole number from 1 to 1000, not '1001'");
        assertBadRequest("prefix=jobs%25ZZ", "prefix 'jobs%ZZ' has a bad escape at position 5");
    }

    @Test
    void theApplicationPropertiesHoldTheDocumentedBlockVerbatim() throws IOException {
        String doc = Files.readString(Path.of("../docs/integrations.md"), StandardCharsets.UTF_8);
        String section = doc.substring(doc.indexOf("## Spring Boot"));
        int start = section.indexOf("```properties\n") + "```properties\n".length();
        String block = section.substring(start, section.indexOf("```", start));
        String properties;
        try (InputStream in = getClass().getResourceAsStream("/application.properties")) {
            properties = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        assertTrue(properties.contains(block), () -> "docs/integrations.md's block:\n" + block);
    }

    /** Sends {@code query} as written: a URI, because the template overloads would encode its '%' once more. */
    private void assertBadRequest(String query, String reason) {
        ResponseEntity<JsonNode> answer = http.getForEntity(URI.create(http.getRootUri() + "/actuator/locks?" + query),
                JsonNode.class);
        assertEquals(400, answer.getStatusCode().value(), () -> query + " -> " + answer.getBody());
        String message = answer.getBody().path("message").asText();
        assertTrue(message.contains(reason), () -> query + " -> " + message);
    }
}
