package dev.locker.janusgraph;

/** The graph-level race with the locks on {@code mem:}'s wait-and-read-back protocol, JanusGraph's own. */
class MemGraphRaceTest extends GraphRaceTest {

    @Override
    String lockerUri() {
        return "mem:janusgraph-graph-race?protocol=wait-and-read-back";
    }
}
