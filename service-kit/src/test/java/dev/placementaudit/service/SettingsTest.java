package dev.placementaudit.service;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SettingsTest {

    @Test
    void laterLayersWin() {
        Settings settings = new Settings.Builder()
                .layer(Map.of("worker.input.topic", "from-file", "worker.poll", "1s"), "file")
                .layer(Map.of("worker.input.topic", "from-env"), "environment")
                .build();

        assertThat(settings.string("worker.input.topic", "default")).isEqualTo("from-env");
        assertThat(settings.duration("worker.poll", Duration.ZERO)).isEqualTo(Duration.ofSeconds(1));
        assertThat(settings.string("worker.absent", "default")).isEqualTo("default");
    }

    @Test
    void environmentVariablesMapOntoDottedKeys() {
        Map<String, String> mapped = Settings.fromEnvironment(Map.of(
                "PA_WORKER_INPUT_TOPIC", "loads",
                "PA_KAFKA_SECURITY_PROTOCOL", "SASL_SSL",
                "KAFKA_BOOTSTRAP_SERVERS", "broker:9092",
                "HOME", "/root"));

        assertThat(mapped).containsOnly(
                Map.entry("worker.input.topic", "loads"),
                Map.entry("kafka.security.protocol", "SASL_SSL"),
                Map.entry("kafka.bootstrap.servers", "broker:9092"));
    }

    @Test
    void unknownKafkaKeysPassThroughWithThePrefixStripped() {
        Settings settings = Settings.of(Map.of(
                "kafka.bootstrap.servers", "b:9093",
                "kafka.sasl.mechanism", "SCRAM-SHA-512",
                "kafka.ssl.truststore.location", "/etc/kafka/truststore.jks",
                "worker.input.topic", "loads"));

        assertThat(settings.kafkaClientConfig()).containsOnly(
                Map.entry("bootstrap.servers", "b:9093"),
                Map.entry("sasl.mechanism", "SCRAM-SHA-512"),
                Map.entry("ssl.truststore.location", "/etc/kafka/truststore.jks"));
    }

    @Test
    void badValuesNameTheKeyTheValueAndTheSource() {
        Settings settings = new Settings.Builder().layer(Map.of("worker.http.port", "eighty", "worker.retries", "99",
                "worker.poll", "soon", "worker.flag", "maybe"), "worker.properties").build();

        assertThatThrownBy(() -> settings.integer("worker.http.port", 8080, 0, 65535))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("worker.http.port='eighty'").hasMessageContaining("worker.properties");
        assertThatThrownBy(() -> settings.integer("worker.retries", 3, 0, 10)).hasMessageContaining("between 0 and 10");
        assertThatThrownBy(() -> settings.duration("worker.poll", Duration.ZERO)).hasMessageContaining("duration");
        assertThatThrownBy(() -> settings.bool("worker.flag", false)).hasMessageContaining("true or false");
        assertThatThrownBy(() -> settings.requiredString("worker.missing")).hasMessageContaining("worker.missing is required");
    }

    @Test
    void describeMasksSecrets() {
        Settings settings = Settings.of(Map.of("kafka.sasl.jaas.config", "org.apache... password=\"hunter2\";",
                "store.jdbc.password", "hunter2", "worker.input.topic", "loads"));

        assertThat(settings.describe().toString()).doesNotContain("hunter2").contains("worker.input.topic=loads");
    }

    @Test
    void everyServicesSystemPropertiesAreALayer() {
        System.setProperty("collector.send.timeout", "7s");
        try {
            Settings settings = Settings.load(null, Map.of());
            assertThat(settings.duration("collector.send.timeout", Duration.ZERO)).hasSeconds(7);
            assertThat(Settings.load(null, Map.of("collector.send.timeout", "9s")).duration("collector.send.timeout", Duration.ZERO))
                    .as("--set wins over -D").hasSeconds(9);
        } finally {
            System.clearProperty("collector.send.timeout");
        }
    }

    @Test
    void listsSplitOnCommas() {
        assertThat(Settings.of(Map.of("k", " Q4_K, Q6_K ,,Dense(4B)")).list("k")).containsExactly("Q4_K", "Q6_K", "Dense(4B)");
        assertThat(Settings.of(Map.of()).list("k")).isEmpty();
    }
}
