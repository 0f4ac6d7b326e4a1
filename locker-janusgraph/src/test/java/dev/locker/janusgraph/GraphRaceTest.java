package dev.locker.janusgraph;

import org.apache.tinkerpop.gremlin.structure.Vertex;
import org.janusgraph.core.JanusGraph;
import org.janusgraph.core.JanusGraphFactory;
import org.janusgraph.core.JanusGraphTransaction;
import org.janusgraph.core.PropertyKey;
import org.janusgraph.core.schema.ConsistencyModifier;
import org.janusgraph.core.schema.JanusGraphIndex;
import org.janusgraph.core.schema.JanusGraphManagement;
import org.janusgraph.diskstorage.TemporaryBackendException;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two graph instances on one data store (two "servers" of one JanusGraph cluster) and several threads each race to
 * create a vertex with the same value, round after round. On the unique index with LOCK consistency exactly one of them
 * commits per value; on a control key whose unique index has no LOCK, every racer commits (all pass the uniqueness
 * read before any commits: the race is real). Every racer reaches a barrier after its uniqueness read and before its
 * commit, so the race happens every round, whatever the scheduler does. A racer that loses with a temporary failure
 * (contention) tries again in a new transaction, so a round cannot end with no commit at all.
 */
abstract class GraphRaceTest {

    static final int ROUNDS = 5;
    static final int THREADS_PER_GRAPH = 3;
    static final int MAX_ATTEMPTS = 100;

    /** The Locker backend under test. */
    abstract String lockerUri();

    @Test
    void exactlyOneCommitPerValueOnTheLockedIndexWhileTheControlKeyRaces() throws Exception {
        String share = "graph-race-" + getClass().getSimpleName() + "-" + System.nanoTime();
        JanusGraph a = open(share, "instance-a");
        JanusGraph b = null;
        ExecutorService pool = Executors.newFixedThreadPool(2 * THREADS_PER_GRAPH);
        try {
            JanusGraphManagement m = a.openManagement();
            PropertyKey name = m.makePropertyKey("name").dataType(String.class).make();
            JanusGraphIndex byName = m.buildIndex("byName", Vertex.class).addKey(name).unique().buildCompositeIndex();
            m.setConsistency(byName, ConsistencyModifier.LOCK);
            PropertyKey control = m.makePropertyKey("control").dataType(String.class).make();
            m.buildIndex("byControl", Vertex.class).addKey(control).unique().buildCompositeIndex(); // no LOCK
            m.commit();
            b = open(share, "instance-b");
            List<JanusGraph> graphs = List.of(a, b);

            int controlDuplicates = 0;
            for (int round = 1; round <= ROUNDS; round++) {
                int locked = race(pool, graphs, "name", "value-" + round);
                int raced = race(pool, graphs, "control", "value-" + round);
                System.out.printf("[graph-race] %s round %d: %d commit(s) on the LOCK index, %d on the control key%n",
                        getClass().getSimpleName(), round, locked, raced);
                assertEquals(1, locked, "round " + round + ": exactly one commit per value under LOCK");
                assertEquals(1, count(b, "name", "value-" + round), "one vertex holds the value");
                controlDuplicates += raced > 1 ? 1 : 0;
            }
            assertEquals(ROUNDS, controlDuplicates, "without LOCK the same racers commit duplicates: the race is real");
        } finally {
            pool.shutdownNow();
            pool.awaitTermination(30, TimeUnit.SECONDS);
            if (b != null) {
                b.close();
            }
            a.close();
        }
    }

    /** Every racer tries to create a vertex with {@code key = value}; returns how many committed. */
    private static int race(ExecutorService pool, List<JanusGraph> graphs, String key, String value) throws Exception {
        int racers = graphs.size() * THREADS_PER_GRAPH;
        CyclicBarrier beforeCommit = new CyclicBarrier(racers);
        AtomicInteger commits = new AtomicInteger();
        List<Future<?>> done = new ArrayList<>();
        for (int i = 0; i < racers; i++) {
            JanusGraph g = graphs.get(i % graphs.size());
            done.add(pool.submit(() -> {
                boolean first = true;
                for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
                    JanusGraphTransaction tx = g.newTransaction();
                    try {
                        tx.addVertex(key, value); // reads the unique index
                        if (first) {
                            first = false;
                            beforeCommit.await(60, TimeUnit.SECONDS);
                        }
                        tx.commit();
                        commits.incrementAndGet();
                        return null;
                    } catch (RuntimeException e) {
                        if (tx.isOpen()) {
                            tx.rollback();
                        }
                        if (!isTemporary(e)) {
                            return null; // lost for good: the value exists, or an expected-value mismatch
                        }
                        Thread.sleep(10);
                    } finally {
                        if (first) { // failed before the barrier: still let the others race
                            first = false;
                            beforeCommit.await(60, TimeUnit.SECONDS);
                        }
                    }
                }
                throw new AssertionError("no outcome after " + MAX_ATTEMPTS + " attempts");
            }));
        }
        for (Future<?> f : done) {
            f.get(120, TimeUnit.SECONDS);
        }
        return commits.get();
    }

    private static boolean isTemporary(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof TemporaryBackendException) {
                return true;
            }
        }
        return false;
    }

    private static long count(JanusGraph g, String key, String value) {
        JanusGraphTransaction tx = g.newTransaction();
        try {
            return tx.traversal().V().has(key, value).count().next();
        } finally {
            tx.rollback();
        }
    }

    private JanusGraph open(String share, String instance) {
        return JanusGraphFactory.build()
                .set("storage.backend", LockerStoreManager.class.getName())
                .set("storage.locker.backend", SharedInMemoryStoreManager.class.getName())
                .set("storage.directory", share)
                .set("storage.locker.uri", lockerUri())
                .set("storage.locker.namespace", share)
                .set("graph.unique-instance-id", instance)
                .set("storage.lock.expiry-time", Duration.ofSeconds(30))
                .set("storage.lock.wait-time", Duration.ofMillis(20))
                .set("ids.authority.wait-time", Duration.ofMillis(20))
                .set("schema.default", "none")
                .open();
    }
}
