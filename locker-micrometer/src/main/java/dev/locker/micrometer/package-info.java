/**
 * Micrometer meters for a {@link dev.locker.api.Locker}: time to acquire, time held, contention refusals, bounded-wait
 * outcomes, renewals, losses by reason and backend errors by kind, tagged by backend and, opt-in, by lock-name prefix.
 *
 * <p>Start at {@link dev.locker.micrometer.LockerMetrics}: it is a {@link dev.locker.api.LockProbe}, installed with
 * {@code LockerConfig.builder().probe(metrics)} before the locker is opened.
 */
package dev.locker.micrometer;
