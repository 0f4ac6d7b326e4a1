package dev.locker.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.event.CommandListener;
import com.mongodb.event.CommandStartedEvent;
import com.mongodb.event.CommandSucceededEvent;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockerConfig;
import dev.locker.api.Run;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Run once on MongoDB: the record write checks the lock document, then upserts the record guarded by the token, in
 * two round trips. A writer paused between them and the next holder are never both told RAN.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MongoRunOnceTest {

    private InProcessMongo mongo;
    private final List<AutoCloseable> toClose = new CopyOnWriteArrayList<>();
    private final ExecutorService pool = Executors.newCachedThreadPool();
    private final String collection = "runonce_" + LockerConfig.randomRid().substring(0, 8);

    @BeforeEach
    void start() {
        mongo = InProcessMongo.start();
    }

    @AfterEach
    void stop() throws Exception {
        pool.shutdownNow();
        for (AutoCloseable c : toClose) {
            try {
                c.close();
            } catch (RuntimeException e) {
                // best effort
            }
        }
        mongo.close();
    }

    /** Freezes the whole client (a GC pause) right after the first find the runner thread makes once armed. */
    static final class Freezer implements CommandListener {
        volatile Thread runner;
        volatile boolean frozen;
        final CountDownLatch arrived = new CountDownLatch(1);
        final CountDownLatch thaw = new CountDownLatch(1);

        @Override
        public void commandStarted(CommandStartedEvent event) {
            if (frozen && Thread.currentThread() != runner) {
                await(thaw); // the keep-alive and clock checks are frozen too
            }
        }

        @Override
        public void commandSucceeded(CommandSucceededEvent event) {
            if (Thread.currentThread() == runner && !frozen && arrived.getCount() > 0
                    && "find".equals(event.getCommandName())) {
                frozen = true;
                arrived.countDown();
                await(thaw);
                frozen = false;
            }
        }

        private static void await(CountDownLatch l) {
            try {
                l.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private MongoLocker open(String name, CommandListener listener) {
        return open(name, listener, Duration.ofSeconds(1));
    }

    private MongoLocker open(String name, CommandListener listener, Duration expiry) {
        MongoClientSettings.Builder settings = MongoClientSettings.builder()
                .applyConnectionString(new ConnectionString(mongo.uri()));
        if (listener != null) {
            settings.addCommandListener(listener);
        }
        MongoClient client = MongoClients.create(settings.build());
        toClose.add(client);
        MongoLocker l = MongoLocker.builder().client(client).database("locker").collection(collection)
                .config(LockerConfig.builder().rid(name).expiry(expiry).build()).build();
        toClose.add(0, l);
        return l;
    }

    /**
     * A's task finishes and its record write confirms A's claim; then A freezes (a GC pause) before its upsert. A's
     * claim expires and B runs the job. A thaws and writes its record: A and B are not both told RAN.
     */
    @Test
    void aPausedRecordWriterAndTheNextHolderAreNeverBothToldRan() throws Exception {
        // 3 s: on a busy machine A's task and its record's check must still fit in A's claim
        Duration expiry = Duration.ofSeconds(3);
        Freezer freezer = new Freezer();
        MongoLocker a = open("a", freezer, expiry);
        MongoLocker b = open("b", null, expiry);
        KeyColumn job = KeyColumn.of("job:once", "c");
        AtomicInteger runs = new AtomicInteger();
        Future<Run> ranA = pool.submit(() -> a.runOnce(job, "a", lease -> {
            runs.incrementAndGet();
            freezer.runner = Thread.currentThread(); // armed: the next find of this thread is writeRecord's check
        }));
        assertTrue(freezer.arrived.await(20, TimeUnit.SECONDS), "A reached its record write");
        Thread.sleep(expiry.toMillis() + 800); // A's claim expires on the server
        CountDownLatch bRunning = new CountDownLatch(1);
        CountDownLatch bGo = new CountDownLatch(1);
        Future<Run> ranB = pool.submit(() -> b.runOnce(job, "b", lease -> {
            runs.incrementAndGet();
            bRunning.countDown();
            try {
                bGo.await(20, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        boolean bRan = bRunning.await(10, TimeUnit.SECONDS);
        freezer.thaw.countDown();
        Run a1 = ranA.get(20, TimeUnit.SECONDS);
        bGo.countDown();
        Run b1 = ranB.get(20, TimeUnit.SECONDS);
        assertTrue(bRan, "B should have taken the expired lock: " + b1);
        assertFalse(a1.ran() && b1.ran(), "runOnce ran the job " + runs.get() + " times and BOTH were told RAN: A " + a1
                + ", B " + b1);
    }
}
