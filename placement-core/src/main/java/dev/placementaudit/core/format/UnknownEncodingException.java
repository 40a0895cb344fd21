package dev.placementaudit.core.format;

/** A tensor names an encoding this resolver cannot price or place. */
public final class UnknownEncodingException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String value;

    public UnknownEncodingException(String value, String why) {
        super("unknown encoding '" + value + "': " + why);
        this.value = value;
    }

    public String value() {
        return value;
    }
}
