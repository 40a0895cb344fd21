package dev.placementaudit.testkit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * A replicated KRaft cluster as production runs one: three nodes, each a process of its own ({@link BrokerProcess},
 * combined broker and controller, a static quorum of the three), every topic and internal topic at replication factor
 * 3 with {@code min.insync.replicas} 2. Each node can be killed with SIGKILL and brought back on its own, so a test can
 * take away the transaction coordinator's leader, any other node, two at once or all three.
 */
public final class BrokerCluster implements KafkaBroker {
    /** Replication factor of every topic; {@code min.insync.replicas} is one less. */
    public static final int REPLICAS = 3;

    private final Path dir;
    private final List<BrokerProcess> nodes;

    private BrokerCluster(Path dir, List<BrokerProcess> nodes) {
        this.dir = dir;
        this.nodes = nodes;
    }

    /** Three nodes on free ports in a new temporary directory, deleted on {@link #close()}; started, every node ready. */
    public static BrokerCluster startEphemeral() {
        Path dir;
        try {
            dir = Files.createTempDirectory("pa-broker-cluster-");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a directory for the cluster", e);
        }
        int[] controllerPorts = IntStream.range(0, REPLICAS).map(i -> EmbeddedKafkaBroker.freePort()).toArray();
        String voters = IntStream.range(0, REPLICAS).mapToObj(i -> (i + 1) + "@localhost:" + controllerPorts[i]).collect(Collectors.joining(","));
        String clusterId = Uuid.randomUuid().toString();
        List<BrokerProcess> nodes = new ArrayList<>();
        for (int i = 0; i < REPLICAS; i++) {
            nodes.add(BrokerProcess.clusterNode(dir.resolve("node-" + (i + 1)), EmbeddedKafkaBroker.freePort(),
                    new EmbeddedKafkaBroker.ClusterNode(i + 1, voters, clusterId, REPLICAS), controllerPorts[i]));
        }
        BrokerCluster cluster = new BrokerCluster(dir, nodes);
        try {
            cluster.start(List.of(1, 2, 3));
        } catch (RuntimeException e) {
            cluster.close();
            throw e;
        }
        return cluster;
    }

    @Override
    public String bootstrapServers() {
        return nodes.stream().map(node -> "localhost:" + node.port()).collect(Collectors.joining(","));
    }

    @Override
    public short replicationFactor() {
        return REPLICAS;
    }

    /** The node ids, 1 to 3. */
    public List<Integer> nodeIds() {
        return IntStream.rangeClosed(1, nodes.size()).boxed().toList();
    }

    /** SIGKILL to each of these nodes at once (as near as one thread can), each waited for until it is gone. */
    public void kill(List<Integer> ids) {
        ids.forEach(id -> node(id).kill());
    }

    /**
     * Starts these nodes again, together, and waits for each to be ready: a node alone waits for a quorum of
     * controllers, so nodes killed together come back together.
     */
    public void start(List<Integer> ids) {
        ids.forEach(id -> node(id).spawn());
        ids.forEach(id -> node(id).awaitReady());
    }

    /** The nodes' process ids, for a bench that reads their CPU time. */
    public List<Long> pids() {
        return nodes.stream().map(BrokerProcess::pid).toList();
    }

    public boolean isAlive(int id) {
        return node(id).isAlive();
    }

    /** The node that leads {@code partition} now, as the live nodes answer; empty while none does or none answers. */
    private Optional<Integer> leaderOf(TopicPartition partition) {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, liveBootstrap(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 3_000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5_000))) {
            TopicDescription topic = admin.describeTopics(List.of(partition.topic())).allTopicNames().get(6, TimeUnit.SECONDS).get(partition.topic());
            return topic.partitions().stream().filter(p -> p.partition() == partition.partition()).map(TopicPartitionInfo::leader)
                    .filter(leader -> leader != null && !leader.isEmpty()).map(Node::id).findFirst();
        } catch (Exception e) {
            return Optional.empty();
        }
    }

    /** The node that leads the transaction coordinator's partition (the cluster has one: {@code __transaction_state-0}). */
    public Optional<Integer> transactionCoordinator() {
        return leaderOf(new TopicPartition("__transaction_state", 0));
    }

    @Override
    public void close() {
        nodes.forEach(BrokerProcess::kill);
        EmbeddedKafkaBroker.deleteRecursively(dir);
    }

    private String liveBootstrap() {
        String live = nodeIds().stream().filter(this::isAlive).map(id -> "localhost:" + node(id).port()).collect(Collectors.joining(","));
        return live.isEmpty() ? bootstrapServers() : live;
    }

    private BrokerProcess node(int id) {
        if (id < 1 || id > nodes.size()) {
            throw new IllegalArgumentException("no node " + id + " in a cluster of " + nodes.size());
        }
        return nodes.get(id - 1);
    }
}
