/**
 * {@code locker}, the operator's command: {@code list}, {@code show}, {@code release --force --reason},
 * {@code watch} and {@code doctor} on any Locker backend chosen by URI ({@code --uri} or {@code LOCKER_URI}).
 *
 * <p>Start at {@link dev.locker.cli.Main} (the entry point) and {@link dev.locker.cli.Cli} (one command line in,
 * one exit code out). Backend-specific deployment checks come from each backend module through
 * {@link dev.locker.spi.DeploymentCheck}; the CLI only prints them.
 */
package dev.locker.cli;
