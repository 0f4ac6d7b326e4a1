package dev.locker.faults;

import java.time.Duration;
import java.util.List;

/**
 * A backend under torture: it runs (or reaches) the server, gives each worker a locker URI, says which scenarios
 * apply to it and why not the others, and injects the server-side faults it supports.
 *
 * <p>Adding a backend is one small class: a URI, {@link #inapplicable} for the scenarios that make no sense on it, and
 * the server faults it can do ({@link FileBackend} is the smallest: no server, so no server faults and no proxy).
 */
public interface Backend extends AutoCloseable {

    /**
     * The backend's short name (a column of the report).
     *
     * @return the name
     */
    String name();

    /**
     * Why {@code scenario} does not apply to this backend, or null when it does.
     *
     * @param scenario the scenario
     * @return the reason, or null
     */
    String inapplicable(Scenario scenario);

    /**
     * Whether Locker promises mutual exclusion on this backend under {@code scenario} (the checkers' safety findings
     * fail the run only then); a scenario outside the promise is still run and reported.
     *
     * @param scenario the scenario
     * @return true when the safety checks must hold
     */
    default boolean promisesSafety(Scenario scenario) {
        return !isControl(scenario);
    }

    /**
     * Whether {@code scenario} is a control here: a guard is off on purpose, and the checkers must flag the run.
     *
     * @param scenario the scenario
     * @return true for a control
     */
    default boolean isControl(Scenario scenario) {
        return scenario == Scenario.CONTROL_NO_GUARD;
    }

    /**
     * The locker URI of one worker; by default every worker's is {@link #uri(String)}.
     *
     * @param worker   the worker's number, from 0
     * @param hostPort as for {@link #uri(String)}
     * @return the URI
     */
    default String uri(int worker, String hostPort) {
        return uri(hostPort);
    }

    /**
     * Gets the server ready for one run of {@code scenario} (starting it if needed).
     *
     * @param scenario the scenario about to run
     * @param expiry   the claims' expiry for this run
     */
    void begin(Scenario scenario, Duration expiry);

    /**
     * The locker URI a worker (or the harness) uses for this run.
     *
     * @param hostPort {@code host:port} to connect to (the server's own, or a proxy's in front of it); ignored by a
     *                 backend without a proxy-able server
     * @return the URI
     */
    String uri(String hostPort);

    /**
     * The server's own {@code host:port} (for a proxy in front of it), or null when there is no single one.
     *
     * @return the address, or null
     */
    String serverAddress();

    /**
     * Extra JVM options for worker processes.
     *
     * @return the options (may be empty)
     */
    default List<String> workerJvmOptions() {
        return List.of();
    }

    /** Kills the server process (SIGKILL). */
    default void killServer() {
        throw new UnsupportedOperationException(name() + " cannot kill its server");
    }

    /** Starts the server again after {@link #killServer()} on the same address (with what it persisted, if anything). */
    default void startServer() {
        throw new UnsupportedOperationException(name() + " cannot restart its server");
    }

    /** Pauses the server process (SIGSTOP). */
    default void pauseServer() {
        throw new UnsupportedOperationException(name() + " cannot pause its server");
    }

    /** Resumes the server process (SIGCONT). */
    default void resumeServer() {
        throw new UnsupportedOperationException(name() + " cannot resume its server");
    }

    /** Aborts the region server that hosts the lock table (HBase). */
    default void abortRegionServer() {
        throw new UnsupportedOperationException(name() + " has no region server");
    }

    /** Ends one run: stops what {@link #begin} started for it alone. */
    void end();

    /** Stops everything the backend started. */
    @Override
    void close();
}
