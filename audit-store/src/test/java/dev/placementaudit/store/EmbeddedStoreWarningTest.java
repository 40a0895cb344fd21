package dev.placementaudit.store;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** An H2 store is the demo's; consuming a cluster elsewhere into one is warned about. Which clusters are "elsewhere". */
class EmbeddedStoreWarningTest {
    @Test
    void loopbackBrokersAreThisMachine() {
        assertThat(AuditStore.onlyLoopback("localhost:9092")).isTrue();
        assertThat(AuditStore.onlyLoopback("127.0.0.1:9092,127.0.0.2:9093")).isTrue();
        assertThat(AuditStore.onlyLoopback("[::1]:9092")).isTrue();
    }

    @Test
    void anyOtherBrokerIsACluster() {
        assertThat(AuditStore.onlyLoopback("kafka-1:9092")).isFalse();
        assertThat(AuditStore.onlyLoopback("localhost:9092,kafka-2:9092")).isFalse();
        assertThat(AuditStore.onlyLoopback("10.0.0.5:9092")).isFalse();
    }
}
