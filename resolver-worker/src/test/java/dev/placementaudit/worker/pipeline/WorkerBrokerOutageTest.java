package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.testkit.BrokerProcess;
import dev.placementaudit.testkit.SampleEvents;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The broker killed with SIGKILL under a busy worker, and brought back after a while, as an SRE saw it: the worker must
 * come through on its own (no restart by a person), and nothing it resolved may be lost or doubled. An outage longer than
 * the transaction timeout makes the coordinator abort the open transaction and bump the producer's epoch; one shorter
 * leaves the producer's open transaction to fail on its own.
 */
class WorkerBrokerOutageTest {
    private static final int LOADS = 300;
    private static final int TENSORS = 4;
    private static BrokerProcess broker;

    @BeforeAll
    static void startBroker() {
        broker = BrokerProcess.startEphemeral();
    }

    @AfterAll
    static void stopBroker() {
        broker.close();
    }

    @Test
    void outlivesAnOutageLongerThanItsTransactionTimeout() throws Exception {
        survives(Duration.ofSeconds(16), "w-long-outage");
    }

    @Test
    void outlivesAShortOutage() throws Exception {
        survives(Duration.ofSeconds(3), "w-short-outage");
    }

    private void survives(Duration outage, String instanceId) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 3);
        List<ModelLoaded> loads = IntStream.range(0, LOADS).mapToObj(i -> SampleEvents.edgeLoad("dep-" + (i % 13), "r1", TENSORS - 2)).toList();
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
        try (ResolverWorker worker = h.start(settings)) {
            h.resolved(20);
            broker.kill();
            // The outage itself: how long the broker stays away is the fault under test, not a wait for a condition.
            LockSupport.parkNanos(outage.toNanos());
            broker.start();

            await().atMost(Duration.ofSeconds(150)).untilAsserted(() -> assertThat(h.resolved(0)).hasSize(LOADS));
            assertThat(worker.state()).as("still running, by itself").isEqualTo(ResolverLoop.State.RUNNING);
            await().atMost(Duration.ofSeconds(30)).until(() -> worker.health().up());
        }
        List<LoadResolved> summaries = h.resolved(LOADS);
        List<AllocationDecided> decisions = h.decisions(LOADS * TENSORS);
        assertThat(summaries).extracting(LoadResolved::getLoadId)
                .containsExactlyInAnyOrderElementsOf(loads.stream().map(ModelLoaded::getLoadId).toList());
        assertThat(decisions).hasSize(LOADS * TENSORS).extracting(AllocationDecided::getDecisionId).doesNotHaveDuplicates();
        assertThat(decisions.stream().collect(Collectors.groupingBy(AllocationDecided::getLoadId, Collectors.counting())))
                .hasSize(LOADS).allSatisfy((load, count) -> assertThat(count).isEqualTo((long) TENSORS));
    }
}
