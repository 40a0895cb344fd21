package dev.placementaudit.schemas;

import org.apache.kafka.common.errors.SerializationException;

/**
 * Bytes that are not a decodable event. Carries a stable {@link Cause} so that a dead-letter record can say
 * what was wrong without parsing the message.
 */
public final class UndecodableEventException extends SerializationException {
    private static final long serialVersionUID = 1L;

    public enum Cause {
        /** Not Avro single-object encoding: wrong or missing C3 01 marker. */
        NOT_SINGLE_OBJECT_ENCODED,
        /** A well-formed header whose schema fingerprint no released version has. */
        UNKNOWN_SCHEMA_FINGERPRINT,
        /** The header is fine, the body does not decode under the writer schema. */
        CORRUPT_BODY,
        /** A different event type's schema, e.g. a decision on the model-loads topic. */
        WRONG_EVENT_TYPE
    }

    private final Cause cause;

    public UndecodableEventException(Cause cause, String message, Throwable underlying) {
        super(message, underlying);
        this.cause = cause;
    }

    public Cause reason() {
        return cause;
    }
}
