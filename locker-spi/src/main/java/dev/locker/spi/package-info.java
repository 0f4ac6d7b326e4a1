/**
 * What backend and store authors implement and use; applications need only {@code dev.locker.api}.
 *
 * <p>Start here: {@link dev.locker.spi.KeyColumnValueStore} is the store under the generic wait-and-read-back protocol
 * ({@code dev.locker.engine.ConsistentKeyLocker}) and under JanusGraph-style expected-value checking; it reads and writes
 * {@link dev.locker.spi.Entry} cells inside a {@link dev.locker.spi.StoreTransaction} and fails with a
 * {@link dev.locker.spi.TemporaryStoreException} (a retry may succeed) or a {@link dev.locker.spi.PermanentStoreException}.
 * {@link dev.locker.spi.UriOptions} parses a locker URI's query options the same way for every backend, refusing
 * unknown ones before any I/O.
 *
 * <p>A new backend implements a {@link dev.locker.spi.LockDriver}: a few typed operations on one lock's claims, and
 * the capabilities it has ({@link dev.locker.spi.WaitQueue}, {@link dev.locker.spi.LockRecords}). Its public locker
 * class extends the engine, {@code dev.locker.engine.LockerEngine}, where the three phases, leases, waiting and run-once
 * exist once. It registers a {@link dev.locker.api.LockerProvider}.
 */
package dev.locker.spi;
