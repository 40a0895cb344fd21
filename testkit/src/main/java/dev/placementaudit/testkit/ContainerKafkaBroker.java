package dev.placementaudit.testkit;

import org.testcontainers.DockerClientFactory;
import org.testcontainers.kafka.KafkaContainer;

/**
 * Kafka in a Docker container via Testcontainers, for machines that have an engine. Kept in its own class so
 * that Testcontainers is never loaded (nor its Docker probing logged) unless this fixture is chosen.
 */
final class ContainerKafkaBroker implements KafkaBroker {
    /** The broker image of the same Kafka version as these clients and the in-JVM broker: one version everywhere. */
    static final String DEFAULT_IMAGE = "apache/kafka:" + KafkaVersion.current();

    private final KafkaContainer container;

    ContainerKafkaBroker(String image) {
        container = new KafkaContainer(image)
                .withEnv("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "1")
                .withEnv("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "1")
                .withEnv("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "false");
        container.start();
    }

    static boolean dockerAvailable() {
        return DockerClientFactory.instance().isDockerAvailable();
    }

    @Override
    public String bootstrapServers() {
        return container.getBootstrapServers();
    }

    @Override
    public void close() {
        container.stop();
    }
}
