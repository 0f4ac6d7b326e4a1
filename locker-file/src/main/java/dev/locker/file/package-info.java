/**
 * The {@code file:} backend: cross-process locks for the processes of one host, kept in a directory of a local file
 * system, with no server to install.
 *
 * <p>{@link dev.locker.file.FileLocker} is an atomic backend: each change of a lock is one read-modify-write of the
 * lock's file under an OS file lock of that lock alone, written atomically (temporary file, renamed). Claims expire on
 * the host's monotonic clock (in the host's terms, also from a time namespace); a holder whose process ended (even by
 * SIGKILL) loses its claims at once, told by the kernel through the OS lock on the locker's session file (a missing
 * session file proves nothing); a claim from before a reboot is dead. Fencing tokens never fall: each is above a
 * high-water mark forced to disk before a grant returns. {@link dev.locker.file.FileLockerProvider} serves
 * {@code file:DIR} URIs. Linux (elsewhere only with the wall clock, when accepted) and file systems known to be local
 * only (ext4, xfs, btrfs, tmpfs, zfs, overlay, ...): network and VM-shared ones are refused, and so are unknown types
 * unless trusted ({@code trustFileSystem=true}).
 */
package dev.locker.file;
