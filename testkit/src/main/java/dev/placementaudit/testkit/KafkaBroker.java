package dev.placementaudit.testkit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** A real Kafka cluster that tests talk to: in this JVM, in a container, or an existing one. */
public interface KafkaBroker extends AutoCloseable {

    String bootstrapServers();

    /** What a client needs to reach this broker; add the client's own settings on top. */
    default Map<String, Object> clientConfig() {
        Map<String, Object> config = new HashMap<>();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
        return config;
    }

    /** How many replicas a topic of this cluster has: 1 on a single broker, 3 on {@link BrokerCluster}. */
    default short replicationFactor() {
        return 1;
    }

    /** Creates the topics (idempotently) and waits until the broker knows them. */
    default void createTopics(int partitions, String... names) {
        try (Admin admin = Admin.create(clientConfig())) {
            List<NewTopic> topics = Arrays.stream(names).map(name -> new NewTopic(name, partitions, replicationFactor())).toList();
            try {
                admin.createTopics(topics).all().get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw new IllegalStateException("cannot create topics " + Arrays.toString(names) + " on " + bootstrapServers(), e.getCause());
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted creating topics", e);
        } catch (TimeoutException e) {
            throw new IllegalStateException("broker " + bootstrapServers() + " did not create " + Arrays.toString(names) + " within 30 s", e);
        }
    }

    /** Topic names are unique per test, so tests sharing one broker never see each other's records. */
    static String uniqueTopic(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    @Override
    void close();
}
