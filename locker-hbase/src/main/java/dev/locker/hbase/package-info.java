/**
 * The HBase backend ({@code hbase://}): one lock row per lock, decided by one {@code checkAndMutate} on its region
 * server, through hbase-client; and an HBase {@link dev.locker.spi.KeyColumnValueStore} for the wait-and-read-back
 * protocol.
 *
 * <p>Start with {@link dev.locker.hbase.HBaseLocker} (its class comment is the safety argument); for JanusGraph-style
 * storage layers, {@link dev.locker.hbase.HBaseKeyColumnValueStore}.
 */
package dev.locker.hbase;
