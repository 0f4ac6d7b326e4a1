/**
 * Side-by-side benchmarks of Locker against raw clients and other lock libraries, measured in the same run.
 *
 * <p>{@link dev.locker.bench.BenchMain} starts its own servers, runs every workload in interleaved rounds and prints
 * one table of ratios (median and spread over the rounds) against baselines measured alongside; the in-JVM parts are
 * JMH benchmarks ({@link dev.locker.bench.MediatorBench}). Nothing here runs in the test command.
 */
package dev.locker.bench;
