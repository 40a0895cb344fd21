package dev.placementaudit.store;

import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.chain.ChainLog;
import dev.placementaudit.store.chain.ChainVerifier;
import dev.placementaudit.store.replay.ProjectionRebuild;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.PostgresServer;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Several store instances on one PostgreSQL database, in one consumer group, assigned round-robin, so a load's
 * decisions and its summary are often ingested by different instances in concurrent transactions: each load still
 * completes exactly once, is compared with its predecessor once, raises its alerts once, joins its incident once
 * (incidents span deployments that different instances ingest), and is chained in log order; what each device observed,
 * arriving while they ingest, counts once too (a leak on the last two releases is one incident per release),
 * with one instance killed with SIGKILL midway. The projection they wrote equals a rebuild from the log by one reader.
 */
@ExtendWith(KafkaBrokerExtension.class)
class MultiInstanceStoreTest {
    private static final int DEPLOYMENTS = 100;
    private static final int RELEASES = 10;
    private static final long LEAK = 512L << 20;
    /** Deployments whose runtime leaks on the last two releases: every third. */
    private static final int LEAKY = (DEPLOYMENTS + 2) / 3;

    private static boolean leaks(dev.placementaudit.events.LoadResolved load) {
        int d = Integer.parseInt(load.getDeploymentId().substring("dep-".length()));
        int release = Integer.parseInt(load.getRelease().substring(1));
        return d % 3 == 0 && release >= RELEASES - 2;
    }

    @ParameterizedTest(name = "{0} instances")
    @ValueSource(ints = {2, 3})
    void everyLoadCompletesOnceWithOneInstanceKilledMidway(int instances, KafkaBroker broker) throws Exception {
        try (TestDatabase db = PostgresServer.fromEnvironment().createIsolatedSchema()) {
            StoreHarness h = new StoreHarness(broker, db);
            List<ModelLoaded> loads = new ArrayList<>();
            for (int release = 0; release < RELEASES; release++) {
                for (int d = 0; d < DEPLOYMENTS; d++) {
                    // Every other release re-encodes the deployment's weights: each comparison finds something.
                    loads.add(StoreHarness.load("dep-" + d, "r" + release, 2, release * 24 + d % 24, release % 2 == 1));
                }
            }
            Map<String, String> settings = h.settings();
            settings.put("store.max.poll.records", "7");
            settings.put("kafka.partition.assignment.strategy", "org.apache.kafka.clients.consumer.RoundRobinAssignor");
            settings.put("kafka.session.timeout.ms", "6000");
            settings.put("kafka.heartbeat.interval.ms", "1000");
            List<Process> processes = new ArrayList<>();
            try {
                for (int i = 0; i < instances; i++) {
                    Map<String, String> own = new HashMap<>(settings);
                    own.put("store.instance.id", h.group + "-" + i);
                    processes.add(StoreProcess.start(own, Path.of("target", "multi-" + h.group + "-" + i + ".log")));
                }
                List<dev.placementaudit.resolution.ResolvedLoad> resolved = h.publish(loads);
                // What each device observed, arriving while the instances ingest (before some loads, after others): the last
                // two releases leak 512 MB off-heap on every third deployment.
                for (dev.placementaudit.resolution.ResolvedLoad r : resolved) {
                    h.publishObservation(StoreHarness.observation(r.summary(), leaks(r.summary()) ? LEAK : 0, true));
                }
                await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(20)).ignoreExceptions()
                        .until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") > loads.size() / 4);
                processes.get(0).destroyForcibly().waitFor(30, TimeUnit.SECONDS);

                await().atMost(Duration.ofSeconds(180)).pollInterval(Duration.ofSeconds(1)).ignoreExceptions()
                        .until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == loads.size()
                                && h.count("SELECT COUNT(*) FROM chain_entries") == loads.size()
                                && h.count("SELECT COUNT(*) FROM load_observations") == loads.size()
                                && h.count("SELECT COUNT(*) FROM runtime_findings") == LEAKY * 2L);
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                throw new AssertionError(h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") + " of " + loads.size()
                        + " loads complete, " + h.count("SELECT COUNT(*) FROM loads") + " summaries and " + h.count("SELECT COUNT(*) FROM load_tensors")
                        + " decisions stored", e);
            } finally {
                for (Process p : processes) {
                    p.destroy();
                    p.waitFor(30, TimeUnit.SECONDS);
                }
            }

            assertThat(h.count("SELECT COUNT(*) FROM load_tensors")).isEqualTo(loads.size() * 4L);
            assertThat(h.count("SELECT COUNT(*) FROM decisions")).as("nothing left staged").isZero();
            StoreHarness.assertReleaseHeads(h);
            assertThat(h.count("SELECT COUNT(*) FROM plan_tensors")).isEqualTo(h.count("SELECT COUNT(*) FROM plans") * 4L);
            // Each release after the first is compared with its predecessor once: 2 re-encoded tensors lost (or gained) their
            // mapping and changed format, plus the off-heap growth where it grew.
            int regressed = DEPLOYMENTS * (RELEASES / 2);
            assertThat(h.count("SELECT COUNT(*) FROM findings WHERE kind = 'LOST_MAPPING'")).isEqualTo(regressed * 2L);
            assertThat(h.count("SELECT COUNT(*) FROM findings WHERE kind = 'GAINED_MAPPING'")).isEqualTo((DEPLOYMENTS * (RELEASES / 2 - 1)) * 2L);
            assertThat(h.count("SELECT COUNT(*) FROM alerts WHERE kind = 'OFFHEAP_GROWTH'")).isEqualTo(regressed);
            assertThat(h.count("SELECT COUNT(*) FROM alerts WHERE kind = 'LOST_MAPPING'")).isEqualTo(regressed);
            // Each alert names its text (top tensors and causes), stored once however many alerts and instances wrote it.
            assertThat(h.count("SELECT COUNT(*) FROM alerts a LEFT JOIN alert_texts t ON t.text_id = a.text_id WHERE t.text_id IS NULL "
                    + "OR a.top_tensors IS NOT NULL OR a.causes IS NOT NULL")).isZero();
            assertThat(h.count("SELECT COUNT(*) FROM alert_texts")).isEqualTo(h.count("SELECT COUNT(DISTINCT text_id) FROM alerts"))
                    .isLessThan(regressed);
            assertThat(h.count("SELECT COUNT(*) FROM (SELECT previous_load_id FROM findings GROUP BY load_id, previous_load_id) x"))
                    .as("each load compared with one predecessor").isEqualTo((long) DEPLOYMENTS * (RELEASES - 1));
            // One incident per odd release (r0 -> r1, r2 -> r3, ...), each shown by every deployment, written by whichever
            // instance took each deployment; all but the last resolved by the next release, which maps the weights again.
            assertThat(h.count("SELECT COUNT(*) FROM incidents WHERE incident_id NOT LIKE 'inc-r%'")).isEqualTo(RELEASES / 2);
            String regressions = " incident_id NOT LIKE 'inc-r%'";
            assertThat(h.count("SELECT COUNT(*) FROM incidents WHERE state = 'OPEN' AND to_release = 'r" + (RELEASES - 1) + "' AND"
                    + regressions)).isEqualTo(1);
            assertThat(h.count("SELECT COUNT(*) FROM incidents WHERE state = 'RESOLVED' AND" + regressions)).isEqualTo(RELEASES / 2 - 1);
            assertThat(h.count("SELECT COUNT(*) FROM incident_deployments WHERE" + regressions)).isEqualTo((long) DEPLOYMENTS * (RELEASES / 2));
            assertThat(h.count("SELECT COUNT(*) FROM incident_deployments WHERE showing AND" + regressions)).isEqualTo(DEPLOYMENTS);
            assertThat(h.count("SELECT SUM(loads) FROM incident_deployments WHERE" + regressions)).as("each load counted once").isEqualTo(regressed);
            // The leak, one incident per release it was seen on: r8's left by every leaking deployment's r9 load, which shows r9's.
            assertThat(h.count("SELECT COUNT(*) FROM incidents WHERE incident_id LIKE 'inc-r%' AND primary_kind = 'UNPLANNED_OFFHEAP'")).isEqualTo(2);
            assertThat(h.count("SELECT COUNT(*) FROM incidents WHERE incident_id LIKE 'inc-r%' AND state = 'OPEN' AND to_release = 'r"
                    + (RELEASES - 1) + "'")).isEqualTo(1);
            assertThat(h.count("SELECT COUNT(*) FROM incident_deployments WHERE incident_id LIKE 'inc-r%'")).isEqualTo(LEAKY * 2L);
            assertThat(h.count("SELECT COUNT(*) FROM incident_deployments WHERE incident_id LIKE 'inc-r%' AND showing")).isEqualTo(LEAKY);
            assertThat(h.count("SELECT SUM(loads) FROM incident_deployments WHERE incident_id LIKE 'inc-r%'")).isEqualTo(LEAKY * 2L);
            try (Connection c = db.dataSource().getConnection()) {
                ChainVerifier.Report report = ChainVerifier.verify(c, Optional.empty(),
                        Optional.of(ChainLog.read(broker.clientConfig(), h.chain, h.group, Duration.ofSeconds(10))));
                assertThat(report.breaks()).isEmpty();
                assertThat(report.entries()).isEqualTo(loads.size());
            }
            StringWriter out = new StringWriter();
            ProjectionRebuild.Result rebuilt = new ProjectionRebuild(StoreConfig.from(Settings.of(settings)), new PrintWriter(out, true))
                    .run(Long.MAX_VALUE, false, false);
            assertThat(rebuilt.equal()).as("the projection %d instances wrote, against one reader's rebuild: %s%n%s", instances,
                    rebuilt.live(), rebuilt.rebuilt()).isTrue();
        }
    }
}
