/**
 * The machinery every backend shares, and the in-JVM {@code mem:} backend.
 *
 * <p>Start with {@link dev.locker.local.LockerEngine}: the engine (in-process arbitration through
 * {@link dev.locker.local.LocalLockMediator}, one record per held lock, deadlines on the monotonic clock, keep-alive
 * and the lost signal) that calls a backend through its {@link dev.locker.spi.LockDriver}. A backend's locker class
 * extends it. Then
 * {@link dev.locker.local.ConsistentKeyLocker}, JanusGraph's wait-and-read-back protocol over any
 * {@link dev.locker.spi.KeyColumnValueStore}, and {@link dev.locker.local.InMemoryStore} under it for {@code mem:}.
 * {@link dev.locker.local.ExpectedValueCheckingStore} adds JanusGraph's expected-value checks to a store.
 */
package dev.locker.local;
