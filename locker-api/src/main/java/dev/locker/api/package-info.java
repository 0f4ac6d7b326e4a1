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
 * <p>Backend and store authors implement the SPI of module {@code locker-spi} (package {@code dev.locker.spi}: the
 * lock driver, the key-column-value store contract and the URI options); the engine, {@code dev.locker.engine}, runs
 * a driver. Two of their
 * types live here because both sides meet through them: {@link dev.locker.api.LockerProvider}, how
 * {@link dev.locker.api.Lockers} finds a backend by URI scheme (it speaks only of API types, so an application never
 * needs the SPI), and {@link dev.locker.api.LockProbe}, which observes every backend step for tests, tracing and
 * metrics.
 */
package dev.locker.api;
