package dev.placementaudit.service.cli;

/**
 * A failure the user can act on: a wrong address, a store that is not there, a file that is missing. The command
 * line prints its message as one line and exits with {@link #exitCode()}; the stack trace only under
 * {@code --verbose}, because for these it says nothing the message does not.
 */
public class CommandFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Configuration, connection and input problems: the user's to fix, not a bug. */
    public static final int USAGE = 2;

    private final int exitCode;

    public CommandFailure(String message) {
        this(message, null);
    }

    public CommandFailure(String message, Throwable cause) {
        this(USAGE, message, cause);
    }

    public CommandFailure(int exitCode, String message, Throwable cause) {
        super(message, cause);
        this.exitCode = exitCode;
    }

    public int exitCode() {
        return exitCode;
    }
}
