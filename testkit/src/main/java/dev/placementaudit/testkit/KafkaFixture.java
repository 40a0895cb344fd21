package dev.placementaudit.testkit;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Chooses the broker a test run talks to:
 * <ol>
 *   <li>{@code KAFKA_BOOTSTRAP_SERVERS} set: that cluster;</li>
 *   <li>{@code -Dkafka.fixture=container} (or env {@code KAFKA_FIXTURE}): Testcontainers, image from
 *       {@code -Dkafka.container.image};</li>
 *   <li>{@code auto}: a container when a Docker engine answers, else embedded;</li>
 *   <li>{@code embedded}, the default: a KRaft broker in this JVM.</li>
 * </ol>
 */
public final class KafkaFixture {
    private KafkaFixture() {
    }

    public static KafkaBroker start() {
        String external = System.getenv("KAFKA_BOOTSTRAP_SERVERS");
        if (external != null && !external.isBlank()) {
            return new ExternalKafkaBroker(external.trim());
        }
        String mode = setting("kafka.fixture", "KAFKA_FIXTURE", "embedded").toLowerCase(Locale.ROOT);
        String image = setting("kafka.container.image", "KAFKA_CONTAINER_IMAGE", ContainerKafkaBroker.DEFAULT_IMAGE);
        return switch (mode) {
            case "embedded" -> EmbeddedKafkaBroker.startEphemeral();
            case "container" -> new ContainerKafkaBroker(image);
            case "auto" -> dockerLikelyPresent() && ContainerKafkaBroker.dockerAvailable()
                    ? new ContainerKafkaBroker(image) : EmbeddedKafkaBroker.startEphemeral();
            default -> throw new IllegalArgumentException("kafka.fixture must be embedded, container or auto, was '" + mode + "'");
        };
    }

    /** Asking Testcontainers without any sign of Docker costs 300 ms and a page of ERROR log. */
    private static boolean dockerLikelyPresent() {
        return System.getenv("DOCKER_HOST") != null
                || Files.exists(Path.of("/var/run/docker.sock"))
                || Files.exists(Path.of(System.getProperty("user.home"), ".testcontainers.properties"));
    }

    static String setting(String property, String env, String fallback) {
        String value = System.getProperty(property);
        if (value == null || value.isBlank()) {
            value = System.getenv(env);
        }
        return value == null || value.isBlank() ? fallback : value.trim();
    }
}
