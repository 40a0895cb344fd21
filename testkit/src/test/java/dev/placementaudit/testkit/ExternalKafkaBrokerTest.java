package dev.placementaudit.testkit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The KAFKA_BOOTSTRAP_SERVERS path: an existing cluster is checked, used, and never shut down. */
@ExtendWith(KafkaBrokerExtension.class)
class ExternalKafkaBrokerTest {

    @Test
    void usesAnExistingClusterThatAnswers(KafkaBroker running) {
        try (ExternalKafkaBroker external = new ExternalKafkaBroker(running.bootstrapServers())) {
            String topic = KafkaBroker.uniqueTopic("external");
            external.createTopics(1, topic);

            assertThat(external.bootstrapServers()).isEqualTo(running.bootstrapServers());
            assertThat(TopicReader.readCommitted(running, topic, 0)).isEmpty();
        }
        // Closing it left the cluster running.
        running.createTopics(1, KafkaBroker.uniqueTopic("still-up"));
    }

    @Test
    void aClusterThatDoesNotAnswerIsNamed() {
        assertThatThrownBy(() -> new ExternalKafkaBroker("127.0.0.1:1"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:1").hasMessageContaining("no broker answered");
    }
}
