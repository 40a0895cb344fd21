package dev.placementaudit.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.placementaudit.collector.CollectorConfig;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.worker.WorkerConfig;
import picocli.CommandLine;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * docker-compose.yml says what the services read: no unknown keys, ports and hosts that line up, and every service's
 * command one the image's launcher (bin/placement-audit) takes.
 */
class DockerComposeTest {
    private static JsonNode services() throws Exception {
        return new ObjectMapper(new YAMLFactory()).readTree(Path.of("..", "docker-compose.yml").toFile()).get("services");
    }

    private static Settings settings(JsonNode service) {
        Map<String, String> env = new HashMap<>();
        service.get("environment").fields().forEachRemaining(e -> env.put(e.getKey(), e.getValue().asText()));
        return Settings.of(Settings.fromEnvironment(env));
    }

    @Test
    void hasKafkaPostgresAndTheThreeServices() throws Exception {
        List<String> names = new java.util.ArrayList<>();
        services().fieldNames().forEachRemaining(names::add);
        assertThat(names).containsExactlyInAnyOrder("kafka", "postgres", "resolver-worker", "audit-store", "collector", "producer");
    }

    /** Transaction bugs differ between Kafka versions: the compose broker runs the version the clients and tests run. */
    @Test
    void theBrokerImageIsTheKafkaVersionTheClientsAndTestsRun() throws Exception {
        assertThat(services().get("kafka").get("image").asText()).isEqualTo("apache/kafka:" + dev.placementaudit.testkit.KafkaVersion.current());
    }

    @Test
    void everyCollectorSettingIsOneTheCollectorReadsAndItsPortIsPublishedOnLoopback() throws Exception {
        JsonNode collector = services().get("collector");
        Map<String, String> env = new HashMap<>();
        collector.get("environment").fields().forEachRemaining(e -> env.put(e.getKey(), e.getValue().asText()));
        // Compose substitutes the digest from the environment; a digest stands in for it here.
        assertThat(env.get("PA_COLLECTOR_FLEET_DEVICES_TOKEN_SHA256")).startsWith("${PA_COLLECTOR_FLEET_DEVICES_TOKEN_SHA256:?");
        env.put("PA_COLLECTOR_FLEET_DEVICES_TOKEN_SHA256", "ab".repeat(32));
        Settings settings = Settings.of(Settings.fromEnvironment(env));

        CollectorConfig config = CollectorConfig.from(settings);

        assertThat(settings.unreadKeys("collector.")).isEmpty();
        assertThat(config.bootstrapServers()).isEqualTo("kafka:9092");
        assertThat(config.fleets()).singleElement().satisfies(fleet -> assertThat(fleet.mayWrite("android-000")).isTrue());
        assertThat(config.http().host()).isEqualTo("0.0.0.0");
        assertThat(collector.get("ports").get(0).asText()).as("clear text only on the host's loopback")
                .isEqualTo("127.0.0.1:" + config.http().port() + ":" + config.http().port());
        assertThat(launcherCommand(collector)).containsExactly("collector", "run");
    }

    @Test
    void everyWorkerSettingIsOneTheWorkerReadsAndItsPortIsPublished() throws Exception {
        JsonNode worker = services().get("resolver-worker");
        Settings settings = settings(worker);

        WorkerConfig config = WorkerConfig.from(settings);

        assertThat(settings.unreadKeys("worker.")).isEmpty();
        assertThat(config.bootstrapServers()).isEqualTo("kafka:9092");
        assertThat(config.http().host()).as("in a container, the only address the published port reaches").isEqualTo("0.0.0.0");
        assertThat(worker.get("ports").get(0).asText()).isEqualTo("127.0.0.1:" + config.http().port() + ":" + config.http().port());
        assertThat(launcherCommand(worker)).containsExactly("worker", "run");
    }

    @Test
    void everyStoreSettingIsOneTheStoreReadsAndPointsAtTheComposeServices() throws Exception {
        JsonNode services = services();
        JsonNode store = services.get("audit-store");
        Settings settings = settings(store);

        StoreConfig config = StoreConfig.from(settings);

        assertThat(settings.unreadKeys("store.")).isEmpty();
        assertThat(config.kafka()).containsEntry("bootstrap.servers", "kafka:9092");
        JsonNode postgres = services.get("postgres").get("environment");
        assertThat(config.jdbcUrl()).isEqualTo("jdbc:postgresql://postgres:5432/" + postgres.get("POSTGRES_DB").asText());
        assertThat(config.jdbcUser()).isEqualTo(postgres.get("POSTGRES_USER").asText());
        assertThat(config.jdbcPassword()).isEqualTo(postgres.get("POSTGRES_PASSWORD").asText());
        assertThat(config.http().host()).isEqualTo("0.0.0.0");
        assertThat(config.http().token()).as("off loopback, the API needs its token").hasValueSatisfying(token ->
                assertThat(token).startsWith("${PA_STORE_API_TOKEN:?"));
        assertThat(config.http().insecure()).isFalse();
        assertThat(store.get("ports").get(0).asText()).isEqualTo("127.0.0.1:" + config.http().port() + ":" + config.http().port());
        assertThat(launcherCommand(store)).containsExactly("store", "run");
    }

    @Test
    void theBrokerAdvertisesTheAddressTheServicesUse() throws Exception {
        JsonNode kafka = services().get("kafka").get("environment");

        assertThat(kafka.get("KAFKA_ADVERTISED_LISTENERS").asText()).isEqualTo("PLAINTEXT://kafka:9092");
        assertThat(kafka.get("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR").asText()).isEqualTo("1");
        assertThat(services().get("producer").get("command").toString()).contains("kafka:9092");
        assertThat(launcherCommand(services().get("producer"))).containsExactly("producer", "simulate");
    }

    /** The (sub)commands the launcher resolves the service's command line to; parsing fails on anything it does not take. */
    private static List<String> launcherCommand(JsonNode service) {
        List<String> args = new java.util.ArrayList<>();
        service.get("command").forEach(a -> args.add(a.asText()));
        return PlacementAudit.commandLine().parseArgs(args.toArray(String[]::new)).asCommandLineList().stream().skip(1)
                .map(CommandLine::getCommandName).toList();
    }

    @Test
    void aMisspeltSettingIsReported() {
        Settings settings = Settings.of(Settings.fromEnvironment(Map.of("PA_WORKER_INPUT_TOPPIC", "x", "KAFKA_BOOTSTRAP_SERVERS", "k:9092")));

        WorkerConfig.from(settings);

        assertThat(settings.unreadKeys("worker.")).containsExactly("worker.input.toppic");
    }
}
