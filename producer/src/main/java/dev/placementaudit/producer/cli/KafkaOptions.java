package dev.placementaudit.producer.cli;

import dev.placementaudit.producer.publish.PlacementEvents;
import dev.placementaudit.service.Settings;
import dev.placementaudit.service.cli.ConfDir;
import dev.placementaudit.service.cli.KafkaReachability;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Kafka connection options shared by the commands that publish. */
final class KafkaOptions {
    @Option(names = "--bootstrap-servers", paramLabel = "HOST:PORT[,...]",
            description = "Kafka bootstrap servers (default: kafka.bootstrap.servers, env KAFKA_BOOTSTRAP_SERVERS or PA_KAFKA_BOOTSTRAP_SERVERS)")
    String bootstrapServers;

    @Option(names = "--topic", defaultValue = "model-loads", description = "topic to publish to (default: ${DEFAULT-VALUE})") String topic;

    @Option(names = "--config", paramLabel = "FILE", description = "properties file with kafka.* client settings (SASL, TLS, ...) "
            + "(default: conf/producer.properties of the distribution, or of $PA_CONF_DIR)") Path config;

    @Option(names = "--max-wait", paramLabel = "DURATION", description = "longest wait for the broker, to connect and then per publish, "
            + "e.g. 10s (default: connect.timeout, env PA_CONNECT_TIMEOUT, else 10s)") String maxWait;

    /** Checks the broker answers and the topic exists within the bound, then opens the publisher. */
    PlacementEvents connect() {
        return connect(null);
    }

    /** As {@link #connect()}, also checking the observations topic, when there is one, exists. */
    PlacementEvents connect(String observationsTopic) {
        Map<String, String> overrides = new LinkedHashMap<>();
        if (bootstrapServers != null) {
            overrides.put("kafka.bootstrap.servers", bootstrapServers);
        }
        if (maxWait != null) {
            overrides.put(Settings.CONNECT_TIMEOUT, maxWait);
        }
        Settings settings = Settings.load(ConfDir.orDefault(config, "producer.properties"), overrides);
        Map<String, Object> kafka = settings.kafkaClientConfig();
        Duration wait = settings.connectTimeout();
        KafkaReachability.check(kafka, wait, observationsTopic == null ? List.of(topic) : List.of(topic, observationsTopic));
        return observationsTopic == null ? PlacementEvents.connect(kafka, topic, wait)
                : PlacementEvents.connect(kafka, topic, observationsTopic, wait);
    }
}
