package dev.placementaudit.schemas;

import org.apache.avro.util.ClassSecurityValidator;

/**
 * Avro 1.12.2 refuses to instantiate generated classes outside a trusted list (AVRO-4189 follow-up) and fails
 * every decode with "Forbidden ... not trusted". The system property it also reads is consulted once in a static
 * initializer, too early for code to set; so we extend the global validator instead, once, before any decode.
 */
final class AvroTrust {
    private static final String EVENTS_PACKAGE = "dev.placementaudit.events.";

    static {
        ClassSecurityValidator.ClassSecurityPredicate previous = ClassSecurityValidator.getGlobal();
        ClassSecurityValidator.setGlobal(ClassSecurityValidator.composite(previous,
                type -> type.getName().startsWith(EVENTS_PACKAGE)));
    }

    private AvroTrust() {
    }

    /** Loading this class is what installs the trust; calling this forces the load. */
    static void ensureInstalled() {
        // intentionally empty
    }
}
