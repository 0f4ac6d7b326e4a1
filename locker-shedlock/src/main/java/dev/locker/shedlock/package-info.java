/**
 * ShedLock over Locker: {@link dev.locker.shedlock.LockerLockProvider} is an
 * {@link net.javacrumbs.shedlock.core.ExtensibleLockProvider} over any Locker URI, so {@code @SchedulerLock} tasks
 * keep their annotations and run under Locker's claims, holder records and fencing tokens.
 *
 * <p>A task reads its lock's fencing token through {@link dev.locker.shedlock.LockedTask#fencingToken()}.
 */
package dev.locker.shedlock;
