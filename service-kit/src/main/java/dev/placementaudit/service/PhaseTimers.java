package dev.placementaudit.service;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Where a service's batches spend their time: one timer per phase, the constants of an enum, tagged {@code phase} with
 * the constant's name in lower case ({@link #label}). Every phase's timer is registered at once, so a dashboard or a
 * rule finds each phase, at zero, before the first batch. The worker's loop and the store's ingest each keep one.
 */
public final class PhaseTimers<E extends Enum<E>> {
    private final Map<E, Timer> timers;

    public PhaseTimers(MeterRegistry registry, String name, String description, Class<E> phases) {
        timers = new EnumMap<>(phases);
        for (E phase : phases.getEnumConstants()) {
            timers.put(phase, Timer.builder(name).description(description).tag("phase", label(phase)).register(registry));
        }
    }

    /** Adds one batch's time in this phase. */
    public void record(E phase, long nanos) {
        timers.get(phase).record(nanos, TimeUnit.NANOSECONDS);
    }

    /** The phase's value of the {@code phase} tag. */
    public static String label(Enum<?> phase) {
        return phase.name().toLowerCase(Locale.ROOT);
    }
}
