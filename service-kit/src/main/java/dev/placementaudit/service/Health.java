package dev.placementaudit.service;

import java.util.Map;

/** What a service says about itself on {@code /health}: up or not, and why. */
public record Health(boolean up, Map<String, Object> details) {
    public Health {
        details = Map.copyOf(details);
    }

    public static Health up(Map<String, Object> details) {
        return new Health(true, details);
    }

    public static Health down(Map<String, Object> details) {
        return new Health(false, details);
    }
}
