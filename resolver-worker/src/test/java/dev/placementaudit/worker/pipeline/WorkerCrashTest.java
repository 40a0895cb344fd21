package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.SampleEvents;
import dev.placementaudit.testkit.TopicReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/** The worker as a real process, killed the two ways production kills it. */
@ExtendWith(KafkaBrokerExtension.class)
class WorkerCrashTest {
    private static final int LOADS = 400;
    private static final int TENSORS = 5;

    @Test
    void killedMidStreamAndRestartedLeavesNoDuplicatesAndNoGaps(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 3);
        List<ModelLoaded> loads = loads();
        h.send(loads);
        Map<String, String> settings = slowSettings(h, "w-crash");
        Path log = Path.of("target", "worker-crash-" + h.input + ".log");

        try (WorkerProcess first = WorkerProcess.start(settings, log)) {
            h.resolved(1);
            first.kill();
        }
        int visibleAfterKill = committedCount(broker, h.resolved);
        try (WorkerProcess second = WorkerProcess.start(settings, log)) {
            assertExactlyOnce(h, loads);
            second.terminate(30);
        }

        assertThat(visibleAfterKill).as("killed mid-stream").isBetween(1, LOADS - 1);
    }

    @Test
    void sigtermFinishesTheBatchInHandExitsAndARestartCompletesTheRest(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 3);
        List<ModelLoaded> loads = loads();
        h.send(loads);
        Map<String, String> settings = slowSettings(h, "w-term");
        Path log = Path.of("target", "worker-term-" + h.input + ".log");
        int exit;
        String output;
        try (WorkerProcess first = WorkerProcess.start(settings, log)) {
            h.resolved(1);
            exit = first.terminate(30);
            output = first.log();
        }
        List<LoadResolved> stopped = h.resolved(0);

        assertThat(exit).as("exited on SIGTERM within 30 s").isIn(0, 143);
        assertThat(output).contains("resolver-worker w-term stopped (STOPPED)");
        assertThat(stopped.size()).as("stopped mid-stream").isBetween(1, LOADS - 1);
        // Whatever is visible is whole: every visible load has all its decisions.
        Map<String, Long> decisionsPerLoad = h.decisions(0).stream()
                .collect(Collectors.groupingBy(AllocationDecided::getLoadId, Collectors.counting()));
        assertThat(stopped).allSatisfy(s -> assertThat(decisionsPerLoad.get(s.getLoadId().toString())).isEqualTo((long) TENSORS));
        assertThat(decisionsPerLoad).hasSize(stopped.size());

        try (WorkerProcess second = WorkerProcess.start(settings, log)) {
            assertExactlyOnce(h, loads);
            second.terminate(30);
        }
    }

    private static List<ModelLoaded> loads() {
        return IntStream.range(0, LOADS).mapToObj(i -> SampleEvents.edgeLoad("dep-" + (i % 17), "r1", TENSORS - 2)).toList();
    }

    /** Two loads per transaction: hundreds of transactions, so a kill lands between or inside one. */
    private static Map<String, String> slowSettings(WorkerHarness h, String instanceId) {
        Map<String, String> settings = h.settings(instanceId);
        settings.put("worker.max.poll.records", "2");
        settings.put("worker.poll.timeout", "100ms");
        settings.put("kafka.session.timeout.ms", "10000");
        settings.put("kafka.heartbeat.interval.ms", "1000");
        return settings;
    }

    private static void assertExactlyOnce(WorkerHarness h, List<ModelLoaded> loads) {
        List<LoadResolved> summaries = h.resolved(LOADS);
        List<AllocationDecided> decisions = h.decisions(LOADS * TENSORS);

        assertThat(summaries).hasSize(LOADS).extracting(LoadResolved::getLoadId)
                .containsExactlyInAnyOrderElementsOf(loads.stream().map(ModelLoaded::getLoadId).toList());
        assertThat(decisions).hasSize(LOADS * TENSORS).extracting(AllocationDecided::getDecisionId).doesNotHaveDuplicates();
        assertThat(decisions.stream().collect(Collectors.groupingBy(AllocationDecided::getLoadId, Collectors.counting())))
                .hasSize(LOADS).allSatisfy((load, count) -> assertThat(count).isEqualTo((long) TENSORS));
    }

    private static int committedCount(KafkaBroker broker, String topic) {
        return TopicReader.readCommitted(broker, topic, 0, Duration.ofSeconds(30), Duration.ofSeconds(2)).size();
    }
}
