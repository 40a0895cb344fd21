package dev.placementaudit.testkit;

import org.junit.jupiter.api.TestTemplate;
import org.junit.jupiter.api.extension.ExtendWith;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the test once against PostgreSQL and once against H2, each time with a {@link TestDatabase} of its own.
 * {@code -Dpa.db.targets=postgresql} (or {@code h2}) narrows it for a quick local run.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@TestTemplate
@ExtendWith(DatabaseTargets.class)
public @interface DatabaseTest {
}
