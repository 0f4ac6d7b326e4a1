/**
 * A Spring Integration {@code LockRegistry} over any Locker URI: {@link dev.locker.springintegration.LockerLockRegistry}.
 */
package dev.locker.springintegration;
