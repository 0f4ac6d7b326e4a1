package dev.locker.bench;

import com.mongodb.MongoWriteException;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.bench.Table.Better;
import dev.locker.bench.Table.Row;
import dev.locker.mongo.MongoLocker;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.mongo.MongoLockProvider;
import org.bson.Document;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * MongoDB acquire+release on the in-process mongo-java-server, against ShedLock's MongoLockProvider and a raw
 * insertOne + deleteOne floor.
 */
final class MongoRows {

    private final Run run;

    MongoRows(Run run) {
        this.run = run;
    }

    void run() throws Exception {
        MongoServer server = new MongoServer(new MemoryBackend());
        server.bind("127.0.0.1", 0);
        InetSocketAddress at = server.getLocalAddress();
        String uri = "mongodb://127.0.0.1:" + at.getPort();
        try (MongoClient client = MongoClients.create(uri);
             MongoLocker locker = MongoLocker.builder().connectionString(uri)
                     .config(LockerConfig.builder().expiry(Duration.ofSeconds(60)).build()).build()) {
            MongoCollection<Document> raw = client.getDatabase("bench").getCollection("raw");
            MongoLockProvider shed = new MongoLockProvider(client.getDatabase("bench"));
            KeyColumn lock = KeyColumn.named("m");
            Map<String, Runnable> ops = new LinkedHashMap<>();
            ops.put("locker", () -> {
                try (Lease l = locker.acquire(lock, "bench")) {
                    l.fencingToken();
                }
            });
            long[] tokens = {0};
            ops.put("raw", () -> {
                String token = Long.toString(++tokens[0]);
                try {
                    raw.insertOne(new Document("_id", "m").append("owner", token)
                            .append("until", new Date(System.currentTimeMillis() + 60_000)));
                } catch (MongoWriteException held) {
                    throw new IllegalStateException("raw lock held", held);
                }
                raw.deleteOne(Filters.and(Filters.eq("_id", "m"), Filters.eq("owner", token)));
            });
            ops.put("shedlock", () -> {
                Optional<SimpleLock> l = shed.lock(new LockConfiguration(Instant.now(), "m", Duration.ofSeconds(60),
                        Duration.ZERO));
                l.orElseThrow(() -> new IllegalStateException("shedlock lock held")).unlock();
            });
            Map<String, Samples> rates = new LinkedHashMap<>();
            for (Map.Entry<String, Runnable> e : ops.entrySet()) {
                rates.put(e.getKey(), new Samples());
                Bench.rate(1, run.slice(), t -> i -> e.getValue().run());
            }
            List<String> names = new ArrayList<>(ops.keySet());
            for (int r = 0; r < run.rounds(); r++) {
                for (int k = 0; k < names.size(); k++) {
                    String name = names.get((k + r) % names.size());
                    rates.get(name).add(Bench.rate(1, run.slice(), t -> i -> ops.get(name).run()));
                }
            }
            String w = "MongoDB acquire+release, 1 thread (in-process mongo-java-server)";
            run.table().add(new Row(w, "pairs/s", rates.get("locker"), "ShedLock 7.9 MongoLockProvider",
                    rates.get("shedlock"), Better.HIGHER, null, false));
            run.table().add(new Row(w, "pairs/s", rates.get("locker"), "raw insertOne + deleteOne", rates.get("raw"),
                    Better.HIGHER, null, false));
        } finally {
            server.shutdownNow();
        }
    }
}
