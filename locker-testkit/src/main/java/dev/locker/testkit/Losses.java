package dev.locker.testkit;

import dev.locker.api.LockLost;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/** A lost-signal listener that keeps what it was told, and when (System.nanoTime). */
final class Losses implements Consumer<LockLost> {
    final List<LockLost> told = new CopyOnWriteArrayList<>();
    private final CountDownLatch first = new CountDownLatch(1);
    private volatile long toldAt;

    @Override
    public void accept(LockLost loss) {
        if (first.getCount() > 0) {
            toldAt = System.nanoTime();
        }
        told.add(loss);
        first.countDown();
    }

    boolean await(long timeout, TimeUnit unit) throws InterruptedException {
        return first.await(timeout, unit);
    }

    /** When the first loss was told. */
    long toldAt() {
        return toldAt;
    }
}
