package dev.placementaudit.store;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.replay.ProjectionRebuild;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A store that starts on a backlog (after a stop, or a fleet's first day): the summaries, far fewer records than the
 * decisions, would be read hundreds of loads ahead of them, so the store holds them back (SummaryPacing). This is the
 * case where pacing acts, so it is where what pacing must not change is checked: every load completes once, in its
 * deployment's log order, each chained once, and a rebuild from the log equals the live projection.
 */
@ExtendWith(KafkaBrokerExtension.class)
class BacklogPacingTest {
    private static final int DEPLOYMENTS = 40;
    private static final int LOADS_EACH = 30;

    @DatabaseTest
    void aBacklogIsPacedAndStoredAsTheLogSays(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        // 1,200 loads, releases changing every ten loads (r2 dequantizes: findings, an incident, its resolution by r3).
        List<ModelLoaded> backlog = new ArrayList<>();
        for (int n = 0; n < LOADS_EACH; n++) {
            for (int d = 0; d < DEPLOYMENTS; d++) {
                String release = "r" + (n / 10 + 1);
                backlog.add(StoreHarness.load("dep-" + d, release, 2, n * 2 + d % 2, release.equals("r2")));
            }
        }
        h.publish(backlog);
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        // Small fetches, as a production store's are small against a backlog of full-size loads (146 tensors each,
        // fetched 4 MiB a partition): a fetch then holds far more loads' summaries than loads' decisions.
        Map<String, String> settings = h.settings();
        settings.put("kafka.max.partition.fetch.bytes", "16384");
        try (AuditStore store = h.start(settings, registry)) {
            await().atMost(Duration.ofSeconds(120)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == backlog.size());
            assertThat(registry.get("pa.store.summaries.paused").counter().count()).as("the summaries ran ahead and were held back").isPositive();
            assertThat(h.count("SELECT COUNT(*) FROM loads")).isEqualTo(backlog.size());
            assertThat(h.count("SELECT COUNT(*) FROM chain_entries")).as("each load chained once").isEqualTo(backlog.size());
            assertThat(h.count("SELECT COUNT(*) FROM decisions")).as("nothing left staged").isZero();
            StoreHarness.assertReleaseHeads(h);
        }
        StringWriter out = new StringWriter();
        ProjectionRebuild.Result rebuilt = new ProjectionRebuild(StoreConfig.from(Settings.of(h.settings())), new PrintWriter(out, true))
                .run(Long.MAX_VALUE, false, false);
        assertThat(rebuilt.equal()).as("%s%n%s%n%s", out, rebuilt.live(), rebuilt.rebuilt()).isTrue();
        assertThat(rebuilt.live().get("incidents")).doesNotStartWith("0 rows");
    }
}
