package dev.placementaudit.service.cli;

import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The one question asked of a cluster before a command relies on it; a real broker answering is tested by its callers. */
class KafkaReachabilityTest {
    @Test
    void aBrokerNobodyListensForIsNamedWithTheBound() throws Exception {
        String nobody;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            nobody = "127.0.0.1:" + socket.getLocalPort();
        }
        long started = System.nanoTime();

        assertThatThrownBy(() -> KafkaReachability.check(Map.of("bootstrap.servers", nobody), Duration.ofMillis(1500), List.of("model-loads")))
                .isInstanceOf(CommandFailure.class)
                .hasMessageStartingWith("no Kafka broker at " + nobody + " answered within 1500 ms")
                .satisfies(e -> assertThat(((CommandFailure) e).exitCode()).isEqualTo(CommandFailure.USAGE));
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(5));
    }

    @Test
    void noServersIsSaidBeforeAnythingIsTried() {
        assertThatThrownBy(() -> KafkaReachability.check(Map.of(), Duration.ofSeconds(1), List.of()))
                .isInstanceOf(CommandFailure.class).hasMessageContaining("no Kafka cluster configured").hasMessageContaining("KAFKA_BOOTSTRAP_SERVERS");
    }

    @Test
    void anUnresolvableAddressIsNamedAtOnce() {
        assertThatThrownBy(() -> KafkaReachability.check(Map.of("bootstrap.servers", "no-such-host.invalid:9092"), Duration.ofSeconds(5), List.of()))
                .isInstanceOf(CommandFailure.class).hasMessageContaining("no-such-host.invalid:9092");
    }
}
