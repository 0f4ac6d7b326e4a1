package dev.locker.hbase;

import org.apache.hadoop.hbase.util.EnvironmentEdge;
import org.apache.hadoop.hbase.util.EnvironmentEdgeManager;

/**
 * A region server's clock for tests on the mini cluster: the system clock plus an offset the test steps. Injected into
 * HBase's {@link EnvironmentEdgeManager}, it is the clock that stamps cells and judges their TTL; the lockers, in the
 * same JVM, time themselves on the system clock, which it does not touch.
 */
final class SteppedClock implements EnvironmentEdge {

    /** How far this clock is ahead of the system clock (behind: negative). */
    volatile long offsetMillis;

    @Override
    public long currentTime() {
        return System.currentTimeMillis() + offsetMillis;
    }
}
