package dev.placementaudit.producer.collect;

/**
 * The collector could not take a batch, and retrying will not change that (a bad token, another fleet's deployment, a
 * body over its bound), or the batch could be neither delivered nor spooled. {@link #status()} is the HTTP status, 0
 * when there was none.
 */
public class CollectorException extends RuntimeException {
    private final int status;
    private final boolean retriable;

    public CollectorException(String message, int status, boolean retriable) {
        this(message, status, retriable, null);
    }

    /** @param cause what the HTTP client met, for {@code --verbose}: the message already says what it means */
    public CollectorException(String message, int status, boolean retriable, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.retriable = retriable;
    }

    public int status() {
        return status;
    }

    /** Whether sending the same batch later may succeed (the collector or its broker was unavailable). */
    public boolean retriable() {
        return retriable;
    }
}
