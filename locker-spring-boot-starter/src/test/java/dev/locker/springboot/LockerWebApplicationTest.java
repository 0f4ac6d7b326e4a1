package dev.locker.springboot;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A servlet web application with the starter answers health and the locks endpoint over HTTP, 400 for bad queries. */
class LockerWebApplicationTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    /** A response's status and its body read as JSON. */
    record Answer(int status, JsonNode body) {
    }

    static ConfigurableApplicationContext startWeb(String uri) {
        return new SpringApplicationBuilder(LockerTestApplication.class)
                .web(WebApplicationType.SERVLET)
                .properties("server.port=0", "locker.uri=" + uri, "locker.rid=web-test",
                        "management.endpoints.web.exposure.include=health,locks",
                        "management.endpoint.health.show-details=always")
                .run();
    }

    static Answer get(ConfigurableApplicationContext app, String pathAndQuery) throws IOException, InterruptedException {
        int port = ((WebServerApplicationContext) app).getWebServer().getPort();
        HttpResponse<String> response = HTTP.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port + pathAndQuery)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        return new Answer(response.statusCode(), JSON.readTree(response.body()));
    }

    static void assertHealthAndListing(ConfigurableApplicationContext app, String backend) throws Exception {
        Answer health = get(app, "/actuator/health");
        assertEquals(200, health.status(), health.body()::toString);
        JsonNode locker = health.body().path("components").path("locker");
        assertEquals("UP", locker.path("status").asText(), health.body()::toString);
        assertEquals(backend, locker.path("details").path("backend").asText(), health.body()::toString);

        Locker bean = app.getBean(Locker.class);
        try (Lease lease = bean.acquire(KeyColumn.of("jobs:nightly", "run"), "nightly report")) {
            Answer page = get(app, "/actuator/locks?prefix=jobs:&limit=10");
            assertEquals(200, page.status(), page.body()::toString);
            JsonNode locks = page.body().path("locks");
            assertEquals(1, locks.size(), page.body()::toString);
            assertEquals("jobs:nightly", locks.get(0).path("key").asText());
            assertEquals("run", locks.get(0).path("column").asText());
            assertEquals(lease.fencingToken(), locks.get(0).path("fencingToken").asLong());
            assertEquals(bean.rid(), locks.get(0).path("holder").path("rid").asText());
            assertEquals("nightly report", locks.get(0).path("holder").path("why").asText());
        }
        assertEquals(0, get(app, "/actuator/locks?prefix=jobs:").body().path("locks").size(), "released, so unlisted");
    }

    static void assertBadRequest(ConfigurableApplicationContext app, String query, String messagePart) throws Exception {
        Answer answer = get(app, "/actuator/locks?" + query);
        assertEquals(400, answer.status(), () -> query + " -> " + answer.body());
        String message = answer.body().path("message").asText();
        assertTrue(message.contains(messagePart), () -> query + " -> " + message);
    }

    @Test
    void aRedisWebApplicationReportsHealthAndListsAHeldLockWithItsHolder() throws Exception {
        try (RedisServer redis = RedisServer.start();
             ConfigurableApplicationContext app = startWeb(redis.uri())) {
            assertHealthAndListing(app, "redis");
        }
    }

    @Test
    void badLocksQueriesAnswer400NamingTheParameter() throws Exception {
        try (RedisServer redis = RedisServer.start();
             ConfigurableApplicationContext app = startWeb(redis.uri())) {
            assertBadRequest(app, "limit=0", "limit must be a whole number from 1 to 1000, not '0'");
            assertBadRequest(app, "limit=1001", "limit must be a whole number from 1 to 1000");
            assertBadRequest(app, "limit=abc", "limit must be a whole number from 1 to 1000, not 'abc'");
            assertBadRequest(app, "cursor=" + URLEncoder.encode("no-such-cursor", StandardCharsets.UTF_8), "cursor");
            assertBadRequest(app, "prefix=" + URLEncoder.encode("jobs%zz", StandardCharsets.UTF_8), "prefix");
            assertEquals(200, get(app, "/actuator/locks?limit=5").status(), "a good query still answers");
        }
    }

    @Test
    void aFileWebApplicationNeedsNoServer(@TempDir Path dir) throws Exception {
        try (ConfigurableApplicationContext app = startWeb("file:" + dir)) {
            assertHealthAndListing(app, "file");
            assertBadRequest(app, "limit=0", "limit must be a whole number");
            assertBadRequest(app, "cursor=no-such-cursor", "cursor");
        }
    }
}
