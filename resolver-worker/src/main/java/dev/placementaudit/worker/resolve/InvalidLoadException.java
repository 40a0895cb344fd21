package dev.placementaudit.worker.resolve;

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
        BAD_PLATFORM
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
