package dev.locker.sample;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.support.GenericApplicationContext;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Two instances of the sample on one Redis take turns at the @SchedulerLock digest job, each run under a new token. */
class DigestJobTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES) // a guard against a hang, not a measure: the runs take well under that
    void twoInstancesOnOneRedisNeverRunTheDigestAtOnceAndEachRunWritesUnderANewerToken() throws Exception {
        SharedArchive archive = new SharedArchive();
        List<JsonNode> runs = new ArrayList<>();
        long heldToken;
        String heldBy;
        try (RedisServer redis = RedisServer.start();
             ConfigurableApplicationContext a = start(redis, "instance-a", archive);
             ConfigurableApplicationContext b = start(redis, "instance-b", archive)) {
            assertTrue(archive.firstWriteStarted.await(2, TimeUnit.MINUTES), "a digest run reached the archive");

            // the first run waits inside its write, so its lock is held now: both instances list the same holder
            JsonNode onA = theOnlyShedLockLock(a);
            JsonNode onB = theOnlyShedLockLock(b);
            assertEquals("shedlock:digest", onA.path("key").asText(), onA::toString);
            assertEquals("ShedLock", onA.path("holder").path("why").asText(), onA::toString);
            heldBy = onA.path("holder").path("rid").asText();
            heldToken = onA.path("fencingToken").asLong();
            assertEquals(heldBy, onB.path("holder").path("rid").asText(), onB::toString);
            assertEquals(heldToken, onB.path("fencingToken").asLong(), onB::toString);
            assertEquals(heldToken, archive.firstToken, "the job wrote under the token the backend lists");
            assertTrue(heldBy.startsWith("instance-a-") || heldBy.startsWith("instance-b-"), heldBy);
            assertEquals(1, archive.writes.get(), "the other instance's attempts meanwhile were skipped");
            archive.firstWriteMayFinish.countDown();

            // both instances get turns; the other one skips while a run is under way
            while (!(get(a, "/jobs/digest").size() >= 3 && get(b, "/jobs/digest").size() >= 3)) {
                assertTrue(archive.refused.isEmpty(), archive.refused::toString);
                Thread.sleep(50);
            }
            runs.addAll(runsOf(a, "instance-a-"));
            runs.addAll(runsOf(b, "instance-b-"));
        }

        assertEquals(1, archive.mostAtOnce.get(), "never two digest writes at once");
        assertTrue(archive.refused.isEmpty(), archive.refused::toString);
        List<Long> tokens = archive.tokens();
        for (int i = 1; i < tokens.size(); i++) {
            assertTrue(tokens.get(i) > tokens.get(i - 1), "each run holds a newer token: " + tokens);
        }
        Map<Long, String> ranBy = new HashMap<>();
        for (JsonNode run : runs) {
            ranBy.put(run.path("fencingToken").asLong(), run.path("ranBy").asText());
        }
        assertEquals(heldBy, ranBy.get(heldToken), "the first run is reported by the instance the endpoint named");
        assertTrue(tokens.containsAll(ranBy.keySet()), () -> "every reported run wrote: " + ranBy + " " + tokens);
    }

    /**
     * An instance of the sample on {@code redis}, writing to {@code archive}, which stands for a database both share.
     * Command-line arguments, because they outrank the sample's application.properties.
     */
    private static ConfigurableApplicationContext start(RedisServer redis, String name, ReportArchive archive) {
        return new SpringApplicationBuilder(SampleApplication.class)
                .initializers(context -> ((GenericApplicationContext) context).registerBean("sharedArchive",
                        ReportArchive.class, () -> archive, definition -> definition.setPrimary(true)))
                .run("--server.port=0", "--locker.uri=" + redis.uri(), "--locker.rid=" + name,
                        "--sample.digest.every=20ms");
    }

    private static JsonNode theOnlyShedLockLock(ConfigurableApplicationContext app) throws Exception {
        JsonNode page = get(app, "/actuator/locks?prefix=shedlock:");
        assertEquals(1, page.path("locks").size(), page::toString);
        return page.path("locks").get(0);
    }

    /** The instance's runs over HTTP, each checked to name the instance's own locker. */
    private static List<JsonNode> runsOf(ConfigurableApplicationContext app, String ridStart) throws Exception {
        List<JsonNode> runs = new ArrayList<>();
        for (JsonNode run : get(app, "/jobs/digest")) {
            assertTrue(run.path("ranBy").asText().startsWith(ridStart), run::toString);
            assertTrue(run.path("fencingToken").asLong() > 0, run::toString);
            runs.add(run);
        }
        return runs;
    }

    private static JsonNode get(ConfigurableApplicationContext app, String path) throws IOException, InterruptedException {
        int port = ((WebServerApplicationContext) app).getWebServer().getPort();
        HttpResponse<String> response = HTTP.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port + path)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, response.statusCode(), () -> path + " -> " + response.body());
        return JSON.readTree(response.body());
    }

    /**
     * The archive both instances write to. It counts writes under way at once and refuses an older token, as a
     * fenced table would. The first write waits for the test, so the test can look at the lock while it is held.
     */
    static final class SharedArchive implements ReportArchive {
        final CountDownLatch firstWriteStarted = new CountDownLatch(1);
        final CountDownLatch firstWriteMayFinish = new CountDownLatch(1);
        final AtomicInteger writes = new AtomicInteger();
        final AtomicInteger atOnce = new AtomicInteger();
        final AtomicInteger mostAtOnce = new AtomicInteger();
        final List<String> refused = new java.util.concurrent.CopyOnWriteArrayList<>();
        private final List<Long> tokens = new ArrayList<>(); // guarded by this
        volatile long firstToken;

        @Override
        public void store(String report, long fencingToken) {
            mostAtOnce.accumulateAndGet(atOnce.incrementAndGet(), Math::max);
            try {
                synchronized (this) {
                    if (!tokens.isEmpty() && fencingToken <= tokens.get(tokens.size() - 1)) {
                        refused.add(report + " under " + fencingToken + " after " + tokens);
                    }
                    tokens.add(fencingToken);
                }
                if (writes.incrementAndGet() == 1) {
                    firstToken = fencingToken;
                    firstWriteStarted.countDown();
                    await(firstWriteMayFinish);
                } else {
                    Thread.sleep(5); // a write that takes a while, so that an overlapping run would meet it
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while writing " + report, e);
            } finally {
                atOnce.decrementAndGet();
            }
        }

        synchronized List<Long> tokens() {
            return new ArrayList<>(tokens);
        }

        private static void await(CountDownLatch latch) throws InterruptedException {
            if (!latch.await(2, TimeUnit.MINUTES)) {
                throw new IllegalStateException("the test never let the first write finish");
            }
        }
    }
}
