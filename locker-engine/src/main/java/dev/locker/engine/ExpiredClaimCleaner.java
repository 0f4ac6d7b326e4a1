package dev.locker.engine;

import dev.locker.spi.KeyColumnValueStore;
import dev.locker.spi.StoreException;
import dev.locker.spi.StoreTransaction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Deletes dead claims that a contended check met, off the caller's path. Bounded: one thread it owns, a queue of at
 * most N rows; work beyond that is dropped (the claims stay dead and are scrubbed by a later operation). Deleting a
 * dead claim is safe because a claim column is unique to its writer and a dead claim is never renewed.
 * {@link #close()} stops the thread and waits briefly for it.
 */
public final class ExpiredClaimCleaner implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ExpiredClaimCleaner.class);
    private static final AtomicLong THREADS = new AtomicLong();

    private final KeyColumnValueStore store;
    private final ThreadPoolExecutor executor;
    private final AtomicLong deleted = new AtomicLong();

    public ExpiredClaimCleaner(KeyColumnValueStore store, int queueSize) {
        this.store = store;
        this.executor = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(queueSize), r -> {
            Thread t = new Thread(r, "locker-cleaner-" + THREADS.incrementAndGet());
            t.setDaemon(true);
            return t;
        }, new ThreadPoolExecutor.DiscardPolicy());
    }

    /** Schedules deletion of {@code columns} (dead claims) of lock row {@code row}; drops it when the queue is full. */
    public void submit(byte[] row, List<byte[]> columns) {
        if (executor.isShutdown()) {
            return;
        }
        List<byte[]> copy = List.copyOf(columns);
        executor.execute(() -> {
            try {
                StoreTransaction tx = store.beginTransaction();
                store.mutate(row, List.of(), copy, tx);
                tx.commit();
                deleted.addAndGet(copy.size());
            } catch (StoreException e) {
                log.debug("Cleaner could not delete {} dead claims; a later operation will: {}", copy.size(), e.toString());
            }
        });
    }

    /** Dead claims deleted so far. */
    public long deleted() {
        return deleted.get();
    }

    /** Waits until the queued work is done (for tests), up to {@code millis}. */
    public boolean awaitIdle(long millis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (executor.getActiveCount() > 0 || !executor.getQueue().isEmpty()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(1);
        }
        return true;
    }

    @Override
    public void close() {
        executor.shutdownNow();
        try {
            executor.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
