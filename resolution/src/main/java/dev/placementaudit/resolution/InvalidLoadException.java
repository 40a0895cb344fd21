package dev.placementaudit.resolution;

/**
 * A ModelLoaded that decodes but cannot be resolved. The code is stable (it goes into dead-letter headers and
 * metrics); the message names the field and the offending value.
 */
public final class InvalidLoadException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public enum Code {
        EMPTY_LOAD,
        TOO_MANY_TENSORS,
        MISSING_FIELD,
        DUPLICATE_TENSOR,
        NEGATIVE_SIZE,
        SHAPE_MISMATCH,
        BYTES_MISMATCH,
        UNKNOWN_DTYPE,
        UNKNOWN_ENCODING,
        BAD_FORM,
        BAD_PROFILE,
        BAD_PLATFORM,
        /** A control character or an unpaired surrogate in a string: nothing downstream can store or print it faithfully. */
        UNSTORABLE_TEXT,
        /** Longer than the audit store's column for it ({@code ProjectionLimits}). */
        TOO_LONG,
        /** A model sha256 that is not 64 hexadecimal characters. */
        BAD_SHA256,
        /** A time outside {@code ProjectionLimits.EARLIEST .. LATEST}. */
        TIME_OUT_OF_RANGE
    }

    private final Code code;
    private final String field;

    public InvalidLoadException(Code code, String field, String message) {
        super(field + ": " + message);
        this.code = code;
        this.field = field;
    }

    public Code code() {
        return code;
    }

    public String field() {
        return field;
    }
}
