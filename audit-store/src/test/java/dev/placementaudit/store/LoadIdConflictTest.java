package dev.placementaudit.store;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.resolution.ResolvedLoad;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.replay.ProjectionRebuild;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.testkit.TopicReader;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A load id stands for one load (issue 56): another load under a stored id (the simulator's seed reused, a device that
 * makes up ids) is dead-lettered as a conflict, decisions and summary, counted, shown by {@code where --load} and warned
 * of on {@code /health}; the first load stays as it was, and the same load sent again stays a silent no-op. A rebuild
 * from the log sets aside the same records.
 */
@ExtendWith(KafkaBrokerExtension.class)
class LoadIdConflictTest {

    @DatabaseTest
    void anotherLoadUnderAStoredIdIsDeadLetteredAndTheFirstStaysAsItWas(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        Map<String, String> settings = h.settings();
        settings.put("store.alerts.per.load", "false");
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        ModelLoaded first = StoreHarness.load("edge-7", "r1", 2, 0, false);
        // Another deployment's load, another release and shape, under the same id; then the same load sent again.
        ModelLoaded impostor = ModelLoaded.newBuilder(StoreHarness.load("edge-9", "r2", 3, 5, true)).setLoadId(first.getLoadId()).build();
        String loadId = first.getLoadId().toString();
        try (AuditStore store = h.start(settings, registry)) {
            List<ResolvedLoad> stored = h.publishAndWait(List.of(first));
            String before = planOf(h, loadId);
            List<ResolvedLoad> conflicting = h.publish(List.of(impostor, first));
            int impostorRecords = conflicting.get(0).decisions().size() + 1;
            // The load after them completes: nothing the conflict left behind holds its deployment up.
            h.publishAndWait(List.of(StoreHarness.load("edge-7", "r2", 2, 10, false)));

            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM dead_letters WHERE detail = 'LOAD_ID_CONFLICT'")
                    == impostorRecords);
            assertThat(h.count("SELECT COUNT(*) FROM dead_letters")).as("the same load again is no conflict").isEqualTo(impostorRecords);
            assertThat(h.count("SELECT COUNT(*) FROM dead_letters WHERE reason = 'INVALID_CONTENT' AND load_id = '" + loadId + "'"))
                    .isEqualTo(impostorRecords);
            assertThat(h.count("SELECT COUNT(*) FROM loads WHERE load_id = '" + loadId + "' AND deployment_id = 'edge-7' AND release_name = 'r1' "
                    + "AND complete = TRUE")).as("the first load, as it was").isEqualTo(1);
            assertThat(planOf(h, loadId)).isEqualTo(before);
            assertThat(h.count("SELECT COUNT(*) FROM decisions")).as("no decision of the impostor staged under the id").isZero();
            assertThat(h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE")).isEqualTo(2);
            assertThat(h.count("SELECT COUNT(*) FROM loads WHERE deployment_id = 'edge-9'")).isZero();
            assertThat(stored.get(0).summary().getLoadId()).isEqualTo(first.getLoadId());

            var letters = TopicReader.readCommitted(broker, h.decisions + ".dlq", impostorRecords);
            assertThat(letters).hasSize(impostorRecords).allSatisfy(letter -> {
                assertThat(header(letter, DeadLetter.DETAIL)).isEqualTo("LOAD_ID_CONFLICT");
                assertThat(header(letter, DeadLetter.ERROR)).contains("deployment edge-9, not edge-7").contains("release r2, not r1")
                        .contains("than the load stored under it");
            });
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(registry.scrape())
                    .contains("pa_store_dlq_total{reason=\"INVALID_CONTENT\"} " + impostorRecords + ".0"));
            assertThat(store.health().up()).as("a conflict is a warning, not an outage").isTrue();
            assertThat(store.health().details().get("warnings")).asString().contains(impostorRecords + " record(s) came under a load id")
                    .contains(loadId);

            CliRun where = CliRun.run(CliRun.settings(h), "where", "--load", loadId);
            assertThat(where.exit()).isZero();
            assertThat(where.out()).as(where.out()).contains("edge-7 r1")
                    .contains("warning: " + impostorRecords + " record(s) set aside as LOAD_ID_CONFLICT").contains(h.decisions + "-")
                    .contains("deployment edge-9, not edge-7");
            CliRun listed = CliRun.run(CliRun.settings(h), "where", "--deployment", "edge-7");
            assertThat(listed.out()).as("set aside, not missing from the load: " + listed.out()).contains(loadId).doesNotContain("dlq:");
        }
        StringWriter out = new StringWriter();
        ProjectionRebuild.Result rebuilt = new ProjectionRebuild(StoreConfig.from(Settings.of(h.settings())), new PrintWriter(out, true))
                .run(Long.MAX_VALUE, false, false);
        assertThat(rebuilt.equal()).as("%s%n%s", rebuilt.live(), rebuilt.rebuilt()).isTrue();
    }

    private static String planOf(StoreHarness h, String loadId) throws Exception {
        return h.string("SELECT plan_digest FROM loads WHERE load_id = '" + loadId + "'");
    }

    private static String header(org.apache.kafka.clients.consumer.ConsumerRecord<byte[], byte[]> record, String name) {
        var header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }
}
