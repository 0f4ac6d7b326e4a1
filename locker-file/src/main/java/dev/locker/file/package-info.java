/**
 * The {@code file:} backend: cross-process locks for the processes of one host, kept in a directory of a local file
 * system, with no server to install.
 *
 * <p>{@link dev.locker.file.FileLocker} is an atomic backend: each change of a lock is one read-modify-write of the
 * lock's file under an OS file lock, written crash-safely (temporary file, forced, renamed). Claims expire on the
 * host's monotonic clock; a holder whose process ended (even by SIGKILL) loses its claims at once, told by the kernel
 * through the OS lock on the locker's session file; a claim from before a reboot is dead. Fencing tokens are forced
 * to disk before a grant returns. {@link dev.locker.file.FileLockerProvider} serves {@code file:DIR} URIs.
 * Local file systems only: NFS, SMB and VM-shared folders are refused.
 */
package dev.locker.file;
