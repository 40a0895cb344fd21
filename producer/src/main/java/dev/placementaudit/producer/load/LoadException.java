package dev.placementaudit.producer.load;

/** A model that cannot be loaded here as planned, in terms of what to change. */
public final class LoadException extends RuntimeException {
    public LoadException(String message, Throwable cause) {
        super(message, cause);
    }
}
