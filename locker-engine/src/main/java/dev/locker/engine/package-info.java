/**
 * The machinery every backend shares, and the in-JVM {@code mem:} backend.
 *
 * <p>Start with {@link dev.locker.engine.LockerEngine}: the engine (in-process arbitration through
 * {@link dev.locker.engine.LocalLockMediator}, one record per held lock, deadlines on the monotonic clock, keep-alive
 * and the lost signal) that calls a backend through its {@link dev.locker.spi.LockDriver}. A backend's locker class
 * extends it. Then
 * {@link dev.locker.engine.ConsistentKeyLocker}, JanusGraph's wait-and-read-back protocol over any
 * {@link dev.locker.spi.KeyColumnValueStore}, and {@link dev.locker.engine.InMemoryStore} under it for {@code mem:}.
 * {@link dev.locker.engine.ExpectedValueCheckingStore} adds JanusGraph's expected-value checks to a store.
 */
package dev.locker.engine;
