package dev.placementaudit.bench;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** A bench's {@code --name value} pairs, as {@code bench/run.sh} passes them on, each read with its default. */
final class BenchOptions {
    private final Map<String, String> values = new HashMap<>();

    BenchOptions(String[] args) {
        for (int i = 0; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 == args.length) {
                throw new IllegalArgumentException("expected --name value pairs, got " + Arrays.toString(args));
            }
            values.put(args[i].substring(2), args[i + 1]);
        }
    }

    String text(String name, String fallback) {
        return values.getOrDefault(name, fallback);
    }

    /** The value, or null when it was not given. */
    String given(String name) {
        return values.get(name);
    }

    int integer(String name, int fallback) {
        return values.containsKey(name) ? Integer.parseInt(values.get(name)) : fallback;
    }

    long number(String name, long fallback) {
        return values.containsKey(name) ? Long.parseLong(values.get(name)) : fallback;
    }

    double decimal(String name, double fallback) {
        return values.containsKey(name) ? Double.parseDouble(values.get(name)) : fallback;
    }

    boolean flag(String name) {
        return Boolean.parseBoolean(values.getOrDefault(name, "false"));
    }

    /** A comma-separated list; one empty value (the default of whatever it sets) when not given. */
    List<String> list(String name) {
        return values.containsKey(name) ? List.of(values.get(name).split(",")) : List.of("");
    }
}
