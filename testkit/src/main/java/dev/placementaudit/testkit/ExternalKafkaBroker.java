package dev.placementaudit.testkit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

import java.util.Map;
import java.util.concurrent.TimeUnit;

/** An existing cluster named by {@code KAFKA_BOOTSTRAP_SERVERS}; never shut down by the tests. */
final class ExternalKafkaBroker implements KafkaBroker {
    private final String bootstrapServers;

    ExternalKafkaBroker(String bootstrapServers) {
        this.bootstrapServers = bootstrapServers;
        // The API timeout may not be shorter than the request timeout (30 s by default): bound both.
        Map<String, Object> config = Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
        try (Admin admin = Admin.create(config)) {
            admin.describeCluster().nodes().get(15, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("KAFKA_BOOTSTRAP_SERVERS=" + bootstrapServers + " is set but no broker answered within 15 s", e);
        }
    }

    @Override
    public String bootstrapServers() {
        return bootstrapServers;
    }

    @Override
    public void close() {
        // not ours to stop
    }
}
