package dev.placementaudit.producer.publish;

/** A ModelLoaded could not be published; the message says why in terms of the configuration to fix. */
public final class PublishException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public PublishException(String message, Throwable cause) {
        super(message, cause);
    }
}
