package dev.locker.engine;

/**
 * The failures of a loop that must go on past each one: the first is rethrown at the end, the later ones suppressed
 * in it. A release or close that meets an Error on one claim still deletes the others.
 */
final class Failures {

    private Throwable first;

    /** Runs {@code step}, keeping its failure for {@link #rethrow} instead of ending the loop. */
    void run(Runnable step) {
        try {
            step.run();
        } catch (RuntimeException | Error e) {
            add(e);
        }
    }

    void add(Throwable e) {
        if (first == null) {
            first = e;
        } else if (first != e) { // the same instance thrown twice cannot suppress itself
            first.addSuppressed(e);
        }
    }

    /** Throws the first failure kept, if any, with the later ones suppressed in it. */
    void rethrow() {
        if (first instanceof Error) {
            throw (Error) first;
        }
        if (first instanceof RuntimeException) {
            throw (RuntimeException) first;
        }
    }
}
