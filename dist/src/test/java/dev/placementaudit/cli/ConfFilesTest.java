package dev.placementaudit.cli;

import dev.placementaudit.collector.CollectorConfig;
import dev.placementaudit.collector.Fleet;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.worker.WorkerConfig;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The shipped conf/ files document settings by example, every line commented out. Uncommented, each example must be
 * a key the service reads and a value it accepts: a file that taught a misspelt key would be worse than none.
 */
class ConfFilesTest {
    private static final Pattern EXAMPLE = Pattern.compile("^#([a-z][a-z0-9]*(?:\\.[a-z0-9]+)+)=(.*)$");
    private static final Path CONF = Path.of("src", "main", "conf");

    /** Every commented {@code #key=value} line of a file, uncommented. */
    private static Map<String, String> examples(String file) throws Exception {
        Map<String, String> examples = new LinkedHashMap<>();
        for (String line : Files.readAllLines(CONF.resolve(file))) {
            Matcher m = EXAMPLE.matcher(line);
            if (m.matches()) {
                examples.put(m.group(1), m.group(2));
            } else {
                assertThat(line).as(file + ": only comments and blank lines, so the file changes nothing until edited").matches("^(#.*)?$");
            }
        }
        return examples;
    }

    @Test
    void everyWorkerExampleIsAWorkerSetting() throws Exception {
        Map<String, String> examples = examples("worker.properties");
        Settings settings = Settings.of(examples);

        WorkerConfig config = WorkerConfig.from(settings);

        assertThat(examples).containsKeys("kafka.bootstrap.servers", "worker.instance.id", "connect.timeout", "worker.http.port");
        assertThat(settings.unreadKeys("worker.")).isEmpty();
        assertThat(config.instanceId()).isEqualTo("resolver-1");
        assertThat(config.connectTimeout()).hasSeconds(10);
    }

    @Test
    void everyStoreExampleIsAStoreSetting() throws Exception {
        Map<String, String> examples = examples("store.properties");
        Settings settings = Settings.of(examples);

        StoreConfig config = StoreConfig.from(settings);

        assertThat(examples).containsKeys("store.jdbc.url", "store.api.token", "connect.timeout", "store.rules.offheap.percent",
                "store.http.host", "store.http.tls.keystore", "store.api.insecure");
        assertThat(config.http().host()).as("the example file serves loopback only").isEqualTo("127.0.0.1");
        assertThat(settings.unreadKeys("store.")).isEmpty();
        assertThat(config.jdbcUrl()).startsWith("jdbc:postgresql://");
    }

    @Test
    void everyCollectorExampleIsACollectorSetting() throws Exception {
        Map<String, String> examples = examples("collector.properties");
        Settings settings = Settings.of(examples);

        CollectorConfig config = CollectorConfig.from(settings);

        assertThat(examples).containsKeys("kafka.bootstrap.servers", "collector.fleets", "collector.http.tls.keystore", "collector.api.insecure",
                "collector.send.timeout", "collector.max.body.bytes");
        assertThat(config.http().host()).as("the example file serves loopback only").isEqualTo("127.0.0.1");
        assertThat(config.fleets()).extracting(Fleet::name).containsExactly("phones", "browsers");
        assertThat(settings.unreadKeys("collector.")).isEmpty();
    }

    @Test
    void theProducerExamplesAreKafkaSettingsAndTheWait() throws Exception {
        assertThat(examples("producer.properties").keySet()).allMatch(k -> k.startsWith("kafka.") || k.equals(Settings.CONNECT_TIMEOUT));
    }
}
