package dev.placementaudit.service;

/** A configuration value that cannot be used; the message names the key, the value and where it came from. */
public final class ConfigException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String key;

    public ConfigException(String key, String value, String why) {
        super("configuration " + key + (value == null ? "" : "='" + value + "'") + " " + why);
        this.key = key;
    }

    public String key() {
        return key;
    }
}
