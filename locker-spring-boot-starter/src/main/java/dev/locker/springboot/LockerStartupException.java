package dev.locker.springboot;

/**
 * The locker cannot be configured as the application asks; {@link LockerFailureAnalyzer} prints what is wrong and what
 * to change. The message never holds the URI, which may carry a password.
 */
public class LockerStartupException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    private final String description;
    private final String action;

    /**
     * A startup failure with its remedy.
     *
     * @param description what is wrong
     * @param action      what the user changes to fix it
     * @param cause       the underlying failure, or null
     */
    public LockerStartupException(String description, String action, Throwable cause) {
        super(description + " " + action, cause);
        this.description = description;
        this.action = action;
    }

    /** @return what is wrong */
    public String description() {
        return description;
    }

    /** @return what the user changes to fix it */
    public String action() {
        return action;
    }
}
