/**
 * A multi-process torture kit for Locker: separate worker JVMs ({@link dev.locker.faults.Worker}) contend for locks on
 * a real backend through Locker's lease API and write to a guarded resource ({@link dev.locker.faults.Referee}) with
 * their fencing tokens, while the harness ({@link dev.locker.faults.TortureRun}) injects one fault per
 * {@link dev.locker.faults.Scenario}: SIGKILL and SIGSTOP of a worker, a frozen connection, a server killed, restarted or
 * paused, a skewed or jumping wall clock (libfaketime), a region server abort. Every event lands on one timeline
 * ({@link System#nanoTime()} is shared by all JVMs of a Linux host), and {@link dev.locker.faults.Checker} judges it:
 * no two workers' hold windows overlap while both leases were valid, no stale write accepted, the next grant after a
 * holder dies comes within expiry + lock wait + slack, no claim is left behind.
 *
 * <p>Backends are {@link dev.locker.faults.Backend}s (Redis, MongoDB, HBase); each says which scenarios apply to it and
 * why not the others.
 */
package dev.locker.faults;
