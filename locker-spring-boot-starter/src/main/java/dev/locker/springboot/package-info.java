/**
 * Spring Boot 3 auto-configuration for Locker: with {@code locker.uri} set, a {@link dev.locker.api.Locker} bean
 * (closed with the context), a health indicator that asks the backend, an actuator endpoint {@code locks} listing held
 * locks, Micrometer meters when Micrometer and {@code locker-micrometer} are present, and ShedLock's lock provider
 * when {@code locker-shedlock} and ShedLock are present.
 *
 * <p>Start at {@link dev.locker.springboot.LockerProperties} for what {@code application.properties} can say, and at
 * {@link dev.locker.springboot.LockerAutoConfiguration} for which beans appear when.
 */
package dev.locker.springboot;
