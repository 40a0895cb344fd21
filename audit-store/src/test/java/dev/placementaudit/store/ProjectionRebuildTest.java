package dev.placementaudit.store;

import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.replay.ProjectionDigest;
import dev.placementaudit.store.replay.ProjectionRebuild;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

@ExtendWith(KafkaBrokerExtension.class)
class ProjectionRebuildTest {

    private static List<ModelLoaded> fleet() {
        List<ModelLoaded> loads = new ArrayList<>();
        IntStream.range(0, 4).forEach(d -> {
            loads.add(StoreHarness.load("dep-" + d, "r1", 2, d, false));
            loads.add(StoreHarness.load("dep-" + d, "r2", 2, 24 + d, d % 2 == 0));
        });
        return loads;
    }

    @DatabaseTest
    void aRebuildFromTheLogEqualsTheLiveProjectionAndSwapsInWithoutRepublishing(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        h.publish(fleet());
        // Live, one record per transaction; the rebuild reads in batches of thousands. The chain must not care.
        Map<String, String> live = h.settings();
        live.put("store.max.poll.records", "1");
        try (AuditStore store = h.start(live)) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 8
                    && h.count("SELECT COUNT(*) FROM alerts WHERE published_at IS NOT NULL") == 4);
        }
        Map<String, String> before = digest(db);
        StringWriter out = new StringWriter();

        ProjectionRebuild.Result result = new ProjectionRebuild(StoreConfig.from(Settings.of(h.settings())), new PrintWriter(out, true))
                .run(Long.MAX_VALUE, true, false);

        assertThat(result.equal()).as(out.toString()).isTrue();
        assertThat(result.swapped()).isTrue();
        assertThat(result.records()).isEqualTo(8 * 4 + 8);
        assertThat(result.rebuilt().get("chain_entries")).as("the hash chain, rebuilt from the log").startsWith("8 rows ")
                .isEqualTo(result.live().get("chain_entries"));
        assertThat(out.toString()).contains("100%").contains("rebuilt projection equals the live one").contains("swapped");
        assertThat(digest(db)).isEqualTo(before);
        assertThat(h.count("SELECT COUNT(*) FROM alerts WHERE published_at IS NULL")).as("nothing to publish again").isZero();
        assertThat(h.count("SELECT COUNT(*) FROM findings")).isPositive();
    }

    /** A group that never ingested has no offsets to rebuild up to: the command says so, and what to give instead. */
    @DatabaseTest
    void aRebuildUnderAGroupWithNoStoredOffsetsSaysWhy(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        h.publish(fleet());
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 8);
        }
        Map<String, String> other = h.settings();
        other.put("store.group.id", "nobody-ingested-as-this");

        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new ProjectionRebuild(StoreConfig.from(Settings.of(other)),
                        new PrintWriter(new StringWriter(), true)).run(Long.MAX_VALUE, false, false))
                .isInstanceOf(dev.placementaudit.service.cli.CommandFailure.class)
                .hasMessageContaining("has stored no offsets for group nobody-ingested-as-this")
                .hasMessageContaining("store.group.id");
    }

    @DatabaseTest
    void anInterruptedRebuildResumesWhenRerun(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        h.publish(fleet());
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 8);
        }
        StoreConfig config = StoreConfig.from(Settings.of(h.settings()));
        StringWriter first = new StringWriter();

        ProjectionRebuild.Result stopped = new ProjectionRebuild(config, new PrintWriter(first, true)).run(10, true, false);
        StringWriter second = new StringWriter();
        ProjectionRebuild.Result resumed = new ProjectionRebuild(config, new PrintWriter(second, true)).run(Long.MAX_VALUE, true, false);

        assertThat(stopped.equal()).isFalse();
        assertThat(stopped.swapped()).isFalse();
        assertThat(first.toString()).contains("rerun to resume");
        assertThat(second.toString()).contains("(resuming)");
        assertThat(resumed.records()).isEqualTo(40 - stopped.records());
        assertThat(resumed.equal()).as(second.toString()).isTrue();
    }

    @DatabaseTest
    void doesNotSwapWhileTheLiveProjectionMovesOn(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        h.publish(fleet());
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 8);
            StoreConfig config = StoreConfig.from(Settings.of(h.settings()));
            new ProjectionRebuild(config, new PrintWriter(new StringWriter(), true)).run(5, false, false);
            h.publish(List.of(StoreHarness.load("late", "r1", 1, 99, false)));
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 9);
            StringWriter out = new StringWriter();
            // The rebuild targets the offsets at its start; the store keeps ingesting while it runs.
            ProjectionRebuild.Result result = new ProjectionRebuild(config, new PrintWriter(out, true)).run(Long.MAX_VALUE, true, false);

            assertThat(result.swapped() && !result.equal()).isFalse();
            assertThat(h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE")).isEqualTo(9);
        }
    }

    private static Map<String, String> digest(TestDatabase db) throws Exception {
        try (Connection c = db.connect()) {
            return ProjectionDigest.of(c, c.getSchema());
        }
    }
}
