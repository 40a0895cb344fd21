package dev.placementaudit.store;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.store.chain.ChainLog;
import dev.placementaudit.store.chain.ChainVerifier;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.extension.ExtendWith;

import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code store prune}: the loads before a cutoff go with everything derived from them, the latest load of each
 * deployment and model and its predecessor stay, the hash chain still verifies (against the log too) from its new
 * anchor, and ingestion goes on chaining after it.
 */
@ExtendWith(KafkaBrokerExtension.class)
class RetentionTest {

    @DatabaseTest
    void pruningDropsOldLoadsKeepsTheLatestComparisonAndLeavesAChainThatVerifies(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        List<ModelLoaded> loads = new ArrayList<>();
        for (int release = 1; release <= 4; release++) {
            loads.add(StoreHarness.load("phone-1", "r" + release, 2, 24 * (release - 1), release >= 3));
            loads.add(StoreHarness.load("phone-2", "r" + release, 2, 24 * (release - 1) + 1, false));
        }
        h.publish(loads);
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM chain_entries") == 8);
        }
        String[] settings = CliRun.settings(h);
        // r1 (T0) and r2 (T0 + 24 h) are older than the cutoff; r3 too, but it is what r4 was compared with.
        String before = StoreHarness.T0.plus(Duration.ofHours(60)).toString();

        CliRun dryRun = run(settings, "prune", "--before", before, "--dry-run");
        assertThat(dryRun.exit()).as(dryRun.err()).isZero();
        assertThat(dryRun.out()).contains("would drop 4 loads (16 decisions) of 2 deployments").contains("dry run: nothing changed");
        assertThat(h.count("SELECT COUNT(*) FROM loads")).isEqualTo(8);

        CliRun prune = run(settings, "prune", "--before", before);
        assertThat(prune.exit()).as(prune.err()).isZero();
        assertThat(prune.out()).contains("[1/2] phone-1: dropped 2 loads, 8 decisions, chain now starts after entry 2")
                .contains("dropped 4 loads (16 decisions) of 2 deployments, and ")
                .contains(" plans no load names any more; 2 chains now start after an anchor, published to " + h.chain);
        assertThat(h.count("SELECT COUNT(*) FROM loads")).isEqualTo(4);
        assertThat(h.count("SELECT COUNT(*) FROM loads WHERE release_name IN ('r1', 'r2')")).isZero();
        assertThat(h.count("SELECT COUNT(*) FROM load_tensors")).isEqualTo(4 * 4);
        StoreHarness.assertReleaseHeads(h);
        // Plans no remaining load names went with their loads; every plan a load names stayed.
        assertThat(h.count("SELECT COUNT(*) FROM plans")).isEqualTo(h.count("SELECT COUNT(DISTINCT plan_digest) FROM loads"));
        assertThat(h.count("SELECT COUNT(*) FROM plan_tensors")).isEqualTo(h.count("SELECT SUM(tensor_count) FROM plans"));
        assertThat(h.count("SELECT COUNT(*) FROM chain_entries")).isEqualTo(4);
        assertThat(h.count("SELECT COUNT(*) FROM findings WHERE load_id IN (SELECT load_id FROM loads)")).isPositive();
        assertThat(run(settings, "diff", "--deployment", "phone-1", "--model", "sample-model", "--from", "r3", "--to", "r4").exit())
                .as("the latest comparison still answers").isZero();

        // r2 -> r3's alerts stay with r3; r2's decisions are gone, and the causes written with the alerts still say why.
        com.fasterxml.jackson.databind.JsonNode alerts = new com.fasterxml.jackson.databind.ObjectMapper()
                .readTree(run(settings, "alerts", "--format", "json").out());
        assertThat(alerts).isNotEmpty().allSatisfy(a -> assertThat(a.get("causes").get(0).get("cause").asText()).contains("re-encoded at load"));
        assertThat(alerts).anySatisfy(a -> assertThat(a.get("fromRelease").asText()).isEqualTo("r2"));

        CliRun verify = run(settings, "verify");
        assertThat(verify.exit()).as(verify.out()).isZero();
        assertThat(verify.out()).contains("2 deployments, 4 chained loads, checked against " + h.chain + ": every chain holds");

        // Ingestion goes on after the anchor.
        h.publish(List.of(StoreHarness.load("phone-1", "r5", 2, 24 * 5, true)));
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM chain_entries WHERE deployment_id = 'phone-1' "
                    + "AND seq = 5") == 1);
        }
        assertThat(run(settings, "verify").exit()).isZero();

        // An anchor is not a way to cut history unseen: removing it, or cutting further by hand, is named.
        try (Connection c = db.dataSource().getConnection()) {
            c.createStatement().executeUpdate("DELETE FROM chain_anchors WHERE deployment_id = 'phone-2'");
            c.createStatement().executeUpdate("UPDATE chain_anchors SET seq = 3, entry_hash = (SELECT entry_hash FROM chain_entries WHERE "
                    + "deployment_id = 'phone-1' AND seq = 3) WHERE deployment_id = 'phone-1'");
            // An entry is kept on its load's row (docs/adr/0015): cutting it by hand clears the row's link.
            c.createStatement().executeUpdate("UPDATE load_rows SET chain_seq = NULL, chain_hash = NULL WHERE deployment_id = 'phone-1' AND chain_seq = 3");
            ChainVerifier.Report report = ChainVerifier.verify(c, Optional.empty(),
                    Optional.of(ChainLog.read(broker.clientConfig(), h.chain, h.group, Duration.ofSeconds(10))));
            assertThat(report.breaks()).extracting(ChainVerifier.Break::deploymentId, ChainVerifier.Break::what)
                    .anySatisfy(b -> assertThat(b.toList()).containsExactly("phone-2",
                            "the log says entries up to 2 were pruned, but the store has no anchor: it was deleted"))
                    .anySatisfy(b -> assertThat(b.toList().get(0)).isEqualTo("phone-1"));
            assertThat(report.breaks().stream().filter(b -> b.deploymentId().equals("phone-1")).map(ChainVerifier.Break::what))
                    .anySatisfy(w -> assertThat(w).contains("the chain starts after entry 3 but the log's anchor says entry 2: its start was cut by hand"));
        }
    }

    @DatabaseTest
    void keepingTheLatestReleasesDropsTheOlderOnesOfEachDeploymentAndModel(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        List<ModelLoaded> loads = new ArrayList<>();
        for (int release = 1; release <= 4; release++) {
            loads.add(StoreHarness.load("phone-1", "r" + release, 2, 24 * (release - 1), release % 2 == 0));
        }
        // A deployment that only ran two releases keeps both.
        loads.add(StoreHarness.load("phone-2", "r3", 2, 49, false));
        loads.add(StoreHarness.load("phone-2", "r4", 2, 73, false));
        h.publish(loads);
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM chain_entries") == 6);
        }
        String[] settings = CliRun.settings(h);

        CliRun refused = run(settings, "prune", "--keep-releases", "0");
        CliRun both = run(settings, "prune", "--keep-releases", "2", "--before", "2026-11-02T00:00:00Z");
        CliRun prune = run(settings, "prune", "--keep-releases", "2");

        assertThat(refused.exit()).isEqualTo(2);
        assertThat(refused.err()).contains("--keep-releases: keep at least 1 release, not 0");
        assertThat(both.exit()).isEqualTo(2);
        assertThat(both.err()).contains("give one of --older-than DURATION, --before INSTANT or --keep-releases N");
        assertThat(prune.exit()).as(prune.err()).isZero();
        assertThat(prune.out()).contains("dropping loads of all but the latest 2 releases of each deployment and model")
                .contains("dropped 2 loads (8 decisions) of 1 deployments");
        assertThat(h.count("SELECT COUNT(*) FROM loads WHERE deployment_id = 'phone-1'")).isEqualTo(2);
        assertThat(h.count("SELECT COUNT(*) FROM loads WHERE deployment_id = 'phone-1' AND release_name IN ('r3', 'r4')")).isEqualTo(2);
        assertThat(h.count("SELECT COUNT(*) FROM loads WHERE deployment_id = 'phone-2'")).isEqualTo(2);
        CliRun verify = run(settings, "verify");
        assertThat(verify.exit()).as(verify.out()).isZero();
        assertThat(verify.out()).contains("2 deployments, 4 chained loads").contains("every chain holds");
    }

    private static CliRun run(String[] settings, String command, String... args) {
        return CliRun.run(settings, command, args);
    }
}
