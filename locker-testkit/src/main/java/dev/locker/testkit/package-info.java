/**
 * What proves a backend: the conformance suites every backend's tests extend, the virtual clock, fault injection and
 * real-server harnesses. A test dependency only.
 *
 * <p>Start with {@link dev.locker.testkit.LockerConformanceSuite}: extend it with a fixture that opens lockers on your
 * backend. It is the sum of capability sections (test interfaces such as {@link dev.locker.testkit.LeaseSection});
 * a backend without a capability extends {@link dev.locker.testkit.ConformanceBase} and implements the sections it
 * has. A store under the wait-and-read-back protocol also extends
 * {@link dev.locker.testkit.ConsistentKeyConformanceSuite}. {@link dev.locker.testkit.VirtualClock} makes protocol
 * scenarios deterministic, {@link dev.locker.testkit.StepPauses} pauses a chosen protocol step,
 * {@link dev.locker.testkit.FaultyStore} fails or pauses a store's calls, and {@link dev.locker.testkit.RedisServer}
 * starts a real {@code redis-server}.
 */
package dev.locker.testkit;
