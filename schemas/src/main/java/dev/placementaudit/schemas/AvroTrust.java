package dev.placementaudit.schemas;

import org.apache.avro.util.ClassSecurityValidator;

/**
 * Avro 1.12.2 refuses to instantiate generated classes outside a trusted list (AVRO-4189 follow-up) and fails
 * every decode - and every builder copy - with "Forbidden ... not trusted". The system property it also reads
 * ({@code org.apache.avro.SERIALIZABLE_PACKAGES}) is consulted once in a static initializer, too early for code to
 * set; so we extend the global validator instead. {@link EventSerde} installs it; every {@code main} calls
 * {@link #install()} first, since copying a record with {@code newBuilder(other)} needs it too.
 */
public final class AvroTrust {
    private static final String EVENTS_PACKAGE = "dev.placementaudit.events.";

    static {
        ClassSecurityValidator.ClassSecurityPredicate previous = ClassSecurityValidator.getGlobal();
        ClassSecurityValidator.setGlobal(ClassSecurityValidator.composite(previous,
                type -> type.getName().startsWith(EVENTS_PACKAGE)));
    }

    private AvroTrust() {
    }

    /** Idempotent: loading this class installs the trust, once; calling this makes sure it is loaded. */
    public static void install() {
        // the static initializer did the work
    }
}
