package dev.locker.janusgraph;

/** The graph-level race with the locks on {@code mem:}. */
class MemGraphRaceTest extends GraphRaceTest {

    @Override
    String lockerUri() {
        return "mem:janusgraph-graph-race";
    }
}
