package dev.locker.cli;

/** A command line the CLI cannot run (exit code 2), found before any I/O; the message says what to write instead. */
final class UsageException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final String command;

    UsageException(String message, String command) {
        super(message);
        this.command = command;
    }

    /** The command whose help fits, or null for the overview. */
    String command() {
        return command;
    }
}
