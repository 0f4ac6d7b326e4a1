package dev.locker.engine;

import dev.locker.api.LockLost;
import dev.locker.api.LockProbe;
import dev.locker.api.LossReason;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The keep-alive of one locker and its lost signal. The {@link KeepAlive} is made on first use, never for a closed
 * locker, and stopped once by the locker's close. A lost hold's listeners are told on its notifier thread.
 */
final class Background {

    /** The engine logs under one name, whichever of its classes writes the line. */
    private static final Logger log = LoggerFactory.getLogger(LockerEngine.class);

    private final Supplier<KeepAlive> factory;
    private final Closing closing;
    private final Transactions transactions;
    private final LockProbe probe;
    private final String rid;
    private volatile KeepAlive keepAlive;

    Background(Supplier<KeepAlive> factory, Closing closing, Transactions transactions, LockProbe probe, String rid) {
        this.factory = factory;
        this.closing = closing;
        this.transactions = transactions;
        this.probe = probe;
        this.rid = rid;
    }

    /** The keep-alive, made now if it was not yet; throws for a closed locker. */
    KeepAlive started() {
        KeepAlive k = keepAlive;
        if (k == null) {
            synchronized (this) {
                if (keepAlive == null) {
                    closing.ensureOpen(); // never start background threads for a closed locker (they would never stop)
                    keepAlive = factory.get();
                }
                k = keepAlive;
            }
        }
        return k;
    }

    /** Watches {@code hold}'s deadline, if the keep-alive runs: without it nothing has asked for the lost signal. */
    void watch(Hold hold) {
        KeepAlive k = keepAlive;
        if (k != null) {
            k.watch(hold);
        }
    }

    void unwatch(Hold hold) {
        KeepAlive k = keepAlive;
        if (k != null) {
            k.unwatch(hold);
        }
    }

    /** Stops keeping {@code kept} alive. */
    void stop(KeepAlive.Kept kept) {
        KeepAlive k = keepAlive;
        if (k != null) {
            k.stop(kept);
        }
    }

    /** Called once by a hold when it is lost: its listeners are told (on the notifier thread). */
    void lost(Hold hold) {
        transactions.lostLease(hold);
        Hold.State s = hold.state();
        LockLost loss = new LockLost(hold.lock, s.reason() == null ? LossReason.GONE : s.reason(), s.lostWhy(), s.newHolder());
        probe.lost(loss, rid);
        List<Consumer<LockLost>> listeners = hold.takeListeners(loss);
        if (!listeners.isEmpty()) {
            log.info("Lost lock {} (locker {}): {}", hold.lock, rid, loss);
            KeepAlive k = keepAlive;
            if (k != null) {
                k.tell(hold.tx, listeners, loss);
            } else {
                KeepAlive.tellHere(listeners, loss);
            }
        }
    }

    /** Adds a lost-listener to {@code hold}: told at once if the hold is lost already, else when it is. */
    void whenLost(Hold hold, Consumer<LockLost> listener) {
        KeepAlive k = started();
        LockLost already = hold.addListener(listener);
        if (already != null) {
            k.tell(hold.tx, List.of(listener), already);
        } else {
            k.watch(hold);
        }
    }

    /** After {@code tx} was renewed to a new expiry: its next keep-alive renewal comes on that expiry's terms. */
    void expiryChanged(Object tx) {
        KeepAlive k = keepAlive;
        KeepAlive.Kept kept = k == null ? null : transactions.kept(tx);
        if (kept != null) {
            k.reschedule(kept);
        }
    }

    /** Starts or stops keeping {@code tx}'s claims alive. */
    void keepAlive(Object tx, boolean on) {
        KeepAlive.Kept kept = transactions.kept(tx);
        if (!on) {
            if (kept != null) {
                stop(kept);
            }
            return;
        }
        Hold[] holds = kept == null ? Transactions.NO_HOLDS : kept.holds();
        if (holds.length == 0) {
            throw new IllegalStateException("transaction " + tx + " holds no lock to keep alive");
        }
        KeepAlive k = started();
        k.start(kept);
        for (Hold hold : holds) {
            k.watch(hold);
        }
    }

    /** Runs {@code task} once after {@code delay} on the keep-alive's thread, unless the locker is closed. */
    void later(Runnable task, Duration delay) {
        if (!closing.isClosed()) {
            started().later(task, delay);
        }
    }

    /** Stops the keep-alive, after the losses close made were handed to it: their listeners are told first. */
    synchronized void close() {
        if (keepAlive != null) {
            keepAlive.close();
        }
    }
}
