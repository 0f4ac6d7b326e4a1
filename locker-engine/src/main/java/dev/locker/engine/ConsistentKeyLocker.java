package dev.locker.engine;

import dev.locker.spi.KeyColumnValueStore;

import java.util.Arrays;
import java.util.Objects;

/**
 * JanusGraph's wait-and-read-back protocol over any {@link KeyColumnValueStore}, with fencing, renewal and scrubbing,
 * made safe against paused and late operations by a write-then-confirm step. This class is the engine over that
 * protocol's driver ({@link ConsistentKeyDriver}), with the builder users call.
 *
 * <p><b>writeLock</b> writes a claim column (client timestamp, rid, nonce: see {@link ClaimCodec}) into the lock's
 * row; a write that takes {@code lockWait} or longer on the monotonic clock is not trusted and is retried with a fresh
 * timestamp, and every attempt deletes all earlier attempts of the same claim. <b>checkLocks</b> waits until
 * {@code lockWait} has passed since the write began (monotonic clock), reads the row back, and goes on only if its claim
 * is the senior live one (earlier attempts of this same claim aside; every other claim counts, whatever its rid). It
 * then writes its fencing token, one above the greatest token the row records, into its claim and into a token column
 * of its own, and reads the row once more to <em>confirm</em>: it holds the lock only if its claim is still there with
 * that token, no other live claim carries a token, and no other holder's token column is as high as its own.
 * Otherwise it withdraws its claim.
 *
 * <p><b>Safety argument.</b> What decides the holder: the senior live claim by client timestamp, then the confirm step.
 * Two claimants that both wrote a token each read the row after their own write, so at least one of them reads after
 * the other's write and backs off: never two holders, even if one of them paused for any time between its read-back
 * and its write. A later holder's confirm sees every earlier holder's token column (they are never overwritten), so
 * tokens strictly increase, whatever late writes land. What decides expiry: the claim's expiry timestamp, on the
 * clocks of the other lockers. What a paused holder can do: nothing that counts. Its deadline on its own monotonic clock
 * is the claim's lifetime counted from before its write, less {@code lockWait} (a peer's clock may run ahead by that
 * much) and a drift allowance; every step compares it again after its I/O, so a step that outlived the claim fails;
 * a renewal rewrites the claim and then confirms like a check, so it cannot resurrect a claim another holder replaced.
 * Assumptions: the clocks of all lockers on a store agree to within {@code lockWait}, and do not step while claims
 * live (a forward step seen by every locker, say of a shared VM host, makes live claims look dead to all of them at
 * once: the holder's monotonic deadline does not move, so a second process could take over); the store's reads see
 * completed writes of the same row (per-row linearizability); a write that returned is durable. Where that cannot be promised,
 * use a native backend, which orders claims on the server.
 *
 * <p>A forced release writes, with its removal, a token column of its own: by token, carrying that token; otherwise
 * one above the greatest token its read saw. A holder's renewal, or a claimant's check, that read the row before the
 * removal and writes its claim back after it carries a token no higher, so it fails its confirm on that column,
 * withdraws the claim and learns the loss: the release stands. (By token, only the claim carrying that token is
 * targeted: another claimant in the middle of its check is not, and may come to hold the lock once it is free.) There
 * are never two holders meanwhile.
 */
public final class ConsistentKeyLocker extends LockerEngine<ConsistentKeyClaim> {

    private final KeyColumnValueStore store;

    private ConsistentKeyLocker(Builder b) {
        super(b, config -> new ConsistentKeyDriver(config, b.store, b.closeStoreOnClose, b.cleanerQueue));
        this.store = b.store;
    }

    public static Builder builder(KeyColumnValueStore store) {
        return new Builder(store);
    }

    public KeyColumnValueStore store() {
        return store;
    }

    static byte[] successor(byte[] column) {
        return Arrays.copyOf(column, column.length + 1);
    }

    /** Options of a {@link ConsistentKeyLocker}; store and config are required. */
    public static final class Builder extends LockerBuilder<Builder> {
        private final KeyColumnValueStore store;
        private boolean closeStoreOnClose;
        private int cleanerQueue = 1024;

        private Builder(KeyColumnValueStore store) {
            this.store = Objects.requireNonNull(store, "store must not be null");
        }

        /** Close the store when the locker closes (default false: the caller owns the store). */
        public Builder closeStoreOnClose(boolean on) {
            this.closeStoreOnClose = on;
            return this;
        }

        /** How many rows may wait for background scrubbing; more are dropped (they expire or are scrubbed later). */
        public Builder cleanerQueue(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("cleanerQueue must be positive, was " + n);
            }
            this.cleanerQueue = n;
            return this;
        }

        public ConsistentKeyLocker build() {
            return new ConsistentKeyLocker(this);
        }
    }
}
