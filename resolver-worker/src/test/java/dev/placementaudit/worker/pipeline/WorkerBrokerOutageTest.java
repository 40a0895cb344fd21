package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.testkit.BrokerChaos;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.SampleEvents;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Brokers killed with SIGKILL under a busy worker, and brought back after a while, as an SRE saw it: the worker must
 * come through on its own (no restart by a person), every load ends resolved, and a load resolved twice is one the
 * reconciler resolved again (counted). On one broker, and on the three-node cluster (replication factor 3,
 * {@code min.insync.replicas} 2) whose kills take the transaction coordinator's leader, it and another node, all three,
 * and another node. An outage longer than the transaction timeout makes the coordinator abort the open transaction and
 * bump the producer's epoch; one shorter leaves the producer's open transaction to fail on its own.
 */
class WorkerBrokerOutageTest {
    private static final int LOADS = 300;
    private static final int TENSORS = 4;
    private BrokerChaos chaos;

    @AfterEach
    void stopBrokers() {
        if (chaos != null) {
            chaos.close();
        }
    }

    @Test
    void outlivesAnOutageLongerThanItsTransactionTimeout() throws Exception {
        chaos = BrokerChaos.start("one broker");
        survives(1, Duration.ofSeconds(16), "w-long-outage");
    }

    /** Four kills of the three-node cluster, one of each kind, each node away a few seconds. */
    @Test
    void outlivesKillsOfEveryKindOnAReplicatedCluster() throws Exception {
        chaos = BrokerChaos.start("three nodes");
        survives(4, Duration.ofSeconds(4), "w-cluster-kills");
    }

    /**
     * Short outages, one after another: each leaves a commit to time out on the client while the broker may or may not
     * have taken it; the producer made anew settles it ({@code initTransactions}) before anything is redone.
     */
    @Test
    void outlivesShortOutagesOneAfterAnother() throws Exception {
        chaos = BrokerChaos.start("one broker");
        survives(4, Duration.ofSeconds(3), "w-short-outages");
    }

    private void survives(int outages, Duration outage, String instanceId) throws Exception {
        KafkaBroker broker = chaos.broker();
        WorkerHarness h = new WorkerHarness(broker, 3);
        int total = LOADS * outages;
        List<ModelLoaded> loads = IntStream.range(0, total).mapToObj(i -> SampleEvents.edgeLoad("dep-" + (i % 13), "r1", TENSORS - 2)).toList();
        h.send(loads);
        Map<String, String> settings = h.settings(instanceId);
        // Two loads a transaction: a transaction is open whenever the broker goes.
        settings.put("worker.max.poll.records", "2");
        settings.put("worker.poll.timeout", "100ms");
        settings.put("worker.transaction.timeout", "10s");
        settings.put("kafka.session.timeout.ms", "30000");
        settings.put("kafka.request.timeout.ms", "5000");
        settings.put("kafka.max.block.ms", "10000");
        settings.put("kafka.default.api.timeout.ms", "10000");
        settings.put("worker.topics.replication", Short.toString(broker.replicationFactor()));
        // What Kafka loses, found within the test: a load the group committed past with no summary 5 s on is resolved again.
        settings.put("worker.reconcile.after", "5s");
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        List<String> aborted = new ArrayList<>();
        try (ResolverWorker worker = h.start(settings, registry)) {
            for (int i = 1; i <= outages; i++) {
                int before = (i - 1) * LOADS;
                awaitResolved(h, worker, before + 20, aborted);
                chaos.kill();
                // The outage itself: how long the brokers stay away is the fault under test, not a wait for a condition.
                LockSupport.parkNanos(outage.toNanos());
                chaos.restart();
            }
            awaitResolved(h, worker, total, aborted);
            assertThat(worker.state()).as("still running, by itself").isEqualTo(ResolverLoop.State.RUNNING);
            await().atMost(Duration.ofSeconds(30)).until(() -> worker.health().up());
        }
        List<ConsumerRecord<byte[], byte[]>> records = h.resolvedRecords(total);
        List<LoadResolved> summaries = records.stream().map(r -> WorkerHarness.RESOLVED.decode(r.value())).toList();
        List<AllocationDecided> decisions = h.decisions(total * TENSORS);
        Set<UUID> sent = loads.stream().map(ModelLoaded::getLoadId).collect(Collectors.toSet());
        assertThat(summaries).as("every load resolved, read_committed, none lost").extracting(LoadResolved::getLoadId)
                .containsAll(sent).allMatch(sent::contains);
        Map<String, Set<String>> decided = decisions.stream().collect(Collectors.groupingBy(AllocationDecided::getLoadId,
                Collectors.mapping(AllocationDecided::getDecisionId, Collectors.toSet())));
        assertThat(decided).as("every tensor of every load decided").hasSize(total).allSatisfy((load, ids) -> assertThat(ids).hasSize(TENSORS));
        // Exactly once, but for what Kafka lost and the reconciler resolved again: a load twice is one of those (its first
        // outputs were only late), never more of them than it resolved again.
        Set<String> twice = new TreeSet<>();
        summaries.stream().collect(Collectors.groupingBy(summary -> summary.getLoadId().toString(), Collectors.counting()))
                .forEach((load, count) -> { if (count > 1) twice.add(load); });
        decisions.stream().collect(Collectors.groupingBy(AllocationDecided::getDecisionId, Collectors.toList()))
                .forEach((id, copies) -> { if (copies.size() > 1) twice.add(copies.get(0).getLoadId()); });
        double reconciled = registry.counter("pa.worker.reconciled").count();
        assertThat(twice).as(() -> "loads resolved twice, where the reconciler resolved " + reconciled + " again (hanging transactions aborted: "
                        + aborted + "); summaries twice:\n"
                        + twice(records) + "transactions open on it now: " + h.openTransactions(h.resolved) + logOf(h.resolved))
                .hasSizeLessThanOrEqualTo((int) reconciled);
    }

    /** The broker's own log of a topic, where there is one broker: what it wrote, markers included. */
    private String logOf(String topic) {
        return chaos.logDirectory().map(dir -> "\nthe topic's log:\n" + TopicLog.describe(dir, topic)).orElse("");
    }

    /**
     * Waits until {@code count} loads are resolved; if they are not, says where the group's offsets stand on the broker.
     * Meanwhile it is the operator on call: a transaction the worker's /health reports left hanging (seen once in CI on
     * one broker killed every few seconds: at stop 53 an output's batch with no marker, its offsets committed; at stop 54 the
     * group's own offsets held unstable on __consumer_offsets, so the loop could not read where to start again) is aborted
     * as the runbook says, and the reconciler must then resolve again what that abort took away. Only what the worker
     * reported is aborted, so a hang it fails to report still fails the test.
     */
    private void awaitResolved(WorkerHarness h, ResolverWorker worker, int count, List<String> aborted) {
        try {
            await().atMost(Duration.ofSeconds(150)).until(() -> {
                List<String> done = h.abortHanging(worker.problems());
                if (!done.isEmpty()) {
                    System.err.println("WorkerBrokerOutageTest: the worker reported a transaction left hanging; aborted as the runbook says: " + done);
                    aborted.addAll(done);
                }
                return h.resolved(0).size() >= count;
            });
        } catch (ConditionTimeoutException e) {
            // Short summaries with every offset committed are either a transaction hanging on an output (no marker: readers
            // stop at it) or one aborted there after its offsets committed (lost): the output's log and the transactions
            // still open on it tell which.
            throw new AssertionError("fewer than " + count + " loads resolved within 150 s; transactions open on " + h.resolved + " now: "
                    + h.openTransactions(h.resolved) + ", on __consumer_offsets: " + h.openTransactions("__consumer_offsets")
                    + "; the worker's problems: " + worker.problems() + logOf("__consumer_offsets") + logOf(h.resolved), e);
        }
    }

    /** The loads summarised more than once, with where each summary is (partition@offset). */
    private static String twice(List<ConsumerRecord<byte[], byte[]>> records) {
        Map<UUID, List<String>> where = new TreeMap<>();
        for (ConsumerRecord<byte[], byte[]> record : records) {
            where.computeIfAbsent(WorkerHarness.RESOLVED.decode(record.value()).getLoadId(), id -> new ArrayList<>())
                    .add(record.partition() + "@" + record.offset());
        }
        StringBuilder out = new StringBuilder();
        where.forEach((load, at) -> {
            if (at.size() > 1) {
                out.append("  ").append(load).append(' ').append(at).append('\n');
            }
        });
        return out.toString();
    }
}
