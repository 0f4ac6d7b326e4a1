package dev.locker.engine;

import dev.locker.api.TimeSource;

import java.util.concurrent.ConcurrentHashMap;

/**
 * A group of mediators, one per namespace. Lockers of one process that talk to the same backend should share a
 * namespace from one group, so their transactions meet here before they meet in the store. An instance you create
 * and inject, not a global singleton: tests and separate "processes" in one JVM each get their own.
 */
public final class LocalLockMediators implements AutoCloseable {

    private final TimeSource time;
    private final ConcurrentHashMap<String, LocalLockMediator> byNamespace = new ConcurrentHashMap<>();

    public LocalLockMediators(TimeSource time) {
        this.time = time;
    }

    public LocalLockMediators() {
        this(TimeSource.system());
    }

    public LocalLockMediator forNamespace(String namespace) {
        if (namespace == null) {
            throw new IllegalArgumentException("namespace must not be null");
        }
        return byNamespace.computeIfAbsent(namespace, n -> new LocalLockMediator(n, time));
    }

    /** Forgets every mediator; records still held by live transactions are dropped with them. */
    @Override
    public void close() {
        byNamespace.clear();
    }
}
