package dev.locker.janusgraph;

import org.apache.tinkerpop.gremlin.structure.Vertex;
import org.janusgraph.core.JanusGraph;
import org.janusgraph.core.JanusGraphTransaction;
import org.janusgraph.core.PropertyKey;
import org.janusgraph.core.schema.ConsistencyModifier;
import org.janusgraph.core.schema.JanusGraphIndex;
import org.janusgraph.core.schema.JanusGraphManagement;
import org.janusgraph.diskstorage.TemporaryBackendException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A unique index with LOCK consistency holds at the graph level: two graph instances on one data store, the locks on
 * mem:.
 */
class JanusGraphUniqueValueTest {

    private final String share = "jg-graph-" + System.nanoTime();
    private final GraphInstances graphs = new GraphInstances(share);

    @AfterEach
    void closeAll() throws Exception {
        graphs.close();
    }

    private JanusGraph open(String instance, Duration expiry) {
        return graphs.graph(instance, expiry);
    }

    /**
     * Instance a's commit checks its lock, then its data write fails temporarily and JanusGraph retries it past the
     * expiry. Meanwhile b takes the lock and commits the same value: no two vertices may hold one unique value.
     */
    @Test
    void aCommitWhoseDataWriteIsRetriedPastTheExpiryDoesNotDuplicateAUniqueValue() throws Exception {
        JanusGraph a = open("instance-a", Duration.ofSeconds(1));
        JanusGraphManagement m = a.openManagement();
        PropertyKey name = m.makePropertyKey("name").dataType(String.class).make();
        JanusGraphIndex byName = m.buildIndex("byName", Vertex.class).addKey(name).unique().buildCompositeIndex();
        m.setConsistency(byName, ConsistencyModifier.LOCK);
        m.commit();
        JanusGraph b = open("instance-b", Duration.ofSeconds(1));

        AtomicReference<Thread> writerA = new AtomicReference<>();
        AtomicBoolean failing = new AtomicBoolean(true);
        CountDownLatch aFailing = new CountDownLatch(1);
        HookedStoreManager.BEFORE_MUTATE_MANY.put(share, () -> {
            if (Thread.currentThread() == writerA.get() && failing.get()) {
                aFailing.countDown();
                throw new TemporaryBackendException("the data backend is overloaded, try again");
            }
        });
        AtomicBoolean aCommitted = new AtomicBoolean();
        AtomicReference<Throwable> aFailed = new AtomicReference<>();
        Thread ta = new Thread(() -> {
            JanusGraphTransaction tx = a.newTransaction();
            try {
                tx.addVertex("name", "v");
                tx.commit();
                aCommitted.set(true);
            } catch (Throwable e) {
                aFailed.set(e);
                if (tx.isOpen()) {
                    tx.rollback();
                }
            }
        }, "instance-a-commit");
        writerA.set(ta);
        ta.start();
        assertTrue(aFailing.await(60, TimeUnit.SECONDS), "a's commit reached its data write (its lock checked)");

        boolean bCommitted = false;
        for (int attempt = 0; attempt < 60 && !bCommitted; attempt++) {
            JanusGraphTransaction tx = b.newTransaction();
            try {
                tx.addVertex("name", "v");
                tx.commit();
                bCommitted = true;
            } catch (RuntimeException e) {
                if (tx.isOpen()) {
                    tx.rollback();
                }
                Thread.sleep(100);
            }
        }
        failing.set(false);
        ta.join(120_000);
        JanusGraphTransaction read = b.newTransaction();
        long indexed = read.traversal().V().has("name", "v").count().next(); // through the unique index
        long vertices = read.traversal().V().values("name").toList().stream().filter("v"::equals).count(); // a scan
        read.rollback();
        System.out.printf("[locker-janusgraph] retried write: a committed=%s (failure %s), b committed=%s, vertices=%d, "
                + "found through the index=%d%n", aCommitted.get(), aFailed.get(), bCommitted, vertices, indexed);
        assertTrue(vertices <= 1, "a unique LOCK index holds one value " + vertices + " times");
    }
}
