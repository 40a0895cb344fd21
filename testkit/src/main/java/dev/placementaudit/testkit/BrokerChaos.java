package dev.placementaudit.testkit;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * A real cluster of broker processes that a test takes away and brings back as production loses them: one broker, or
 * the three-node cluster, whose kills go in turn to the transaction coordinator's leader, that leader and another node
 * at once (below {@code min.insync.replicas}), all three, and another node.
 */
public interface BrokerChaos extends AutoCloseable {
    /** The clusters a chaos test runs on, by name: "one broker" and "three nodes". */
    List<String> KINDS = List.of("one broker", "three nodes");

    static BrokerChaos start(String kind) {
        return switch (kind) {
            case "one broker" -> new OneBroker(BrokerProcess.startEphemeral());
            case "three nodes" -> new ThreeNodes(BrokerCluster.startEphemeral());
            default -> throw new IllegalArgumentException("no such cluster: " + kind + "; one of " + KINDS);
        };
    }

    KafkaBroker broker();

    /** What {@link ThreeNodes} kills, in turn; each kill's description begins with one of these and a colon. */
    List<String> KILLS = List.of("the coordinator's leader", "the coordinator's leader and another node (below min.insync.replicas)",
            "all three nodes", "another node");

    /** SIGKILL to the next victims; says which, beginning with what kind of kill it is (one broker: "the broker"). */
    String kill();

    /** Starts what {@link #kill} took away, and waits until it is ready. */
    void restart();

    /** Where a single broker keeps its log, for a test that reads it to explain a failure; empty for a cluster. */
    Optional<Path> logDirectory();

    @Override
    void close();

    /** The one broker, killed and restarted whole. */
    final class OneBroker implements BrokerChaos {
        private final BrokerProcess broker;

        OneBroker(BrokerProcess broker) {
            this.broker = broker;
        }

        @Override
        public KafkaBroker broker() {
            return broker;
        }

        @Override
        public String kill() {
            broker.kill();
            return "the broker";
        }

        @Override
        public void restart() {
            broker.start();
        }

        @Override
        public Optional<Path> logDirectory() {
            return Optional.of(broker.dataDirectory());
        }

        @Override
        public void close() {
            broker.close();
        }
    }

    /** Three nodes: the coordinator's leader, it and another, all three, another, in turn. */
    final class ThreeNodes implements BrokerChaos {
        private final BrokerCluster cluster;
        private int round;
        private List<Integer> down = List.of();

        ThreeNodes(BrokerCluster cluster) {
            this.cluster = cluster;
        }

        @Override
        public KafkaBroker broker() {
            return cluster;
        }

        @Override
        public String kill() {
            int coordinator = cluster.transactionCoordinator().orElse(1);
            int other = coordinator % 3 + 1;
            int kind = round++ % 4;
            down = switch (kind) {
                case 0 -> List.of(coordinator);
                case 1 -> List.of(coordinator, other);
                case 2 -> cluster.nodeIds();
                default -> List.of(other);
            };
            cluster.kill(down);
            return KILLS.get(kind) + ": nodes " + down + " (coordinator " + coordinator + ")";
        }

        @Override
        public void restart() {
            cluster.start(down);
            down = List.of();
        }

        @Override
        public Optional<Path> logDirectory() {
            return Optional.empty();
        }

        @Override
        public void close() {
            cluster.close();
        }
    }
}
