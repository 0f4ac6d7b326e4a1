/**
 * A user's project built only on {@code locker-bom} and {@code locker-redis}. Start with
 * {@link dev.locker.bomexample.RenameJob}.
 */
package dev.locker.bomexample;
