/**
 * The contract every Locker backend keeps, and all an application codes against.
 *
 * <p>Start here: {@link dev.locker.api.Lockers#open(String)} opens a {@link dev.locker.api.Locker} by URI
 * ({@code mem:}, {@code redis://}, {@code mongodb://}, {@code hbase://}); {@link dev.locker.api.Locker#acquire} gives a
 * {@link dev.locker.api.Lease} to use in try-with-resources, with its fencing token; storage-layer code uses the
 * three phases ({@link dev.locker.api.Locker#writeLock}, {@link dev.locker.api.Locker#checkLocks},
 * {@link dev.locker.api.Locker#deleteLocks}) with a {@link dev.locker.api.KeyColumn} per lock. Failures are a
 * {@link dev.locker.api.TemporaryLockingException} (a retry may succeed) or a
 * {@link dev.locker.api.PermanentLockingException}; {@link dev.locker.api.LockerConfig} holds every option and its
 * default.
 *
 * <p>For backend and store authors, the same package holds the SPI: {@link dev.locker.api.LockerProvider} (a backend
 * found by URI scheme), {@link dev.locker.api.KeyColumnValueStore} with {@link dev.locker.api.Entry} and
 * {@link dev.locker.api.StoreTransaction} (a store under the wait-and-read-back protocol), and
 * {@link dev.locker.api.LockProbe} (observing every backend step, for tests, tracing and metrics).
 */
package dev.locker.api;
