package dev.placementaudit.store;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.store.chain.ChainLog;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.extension.ExtendWith;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code store verify} checks each chain from where the last verify found it to agree with a published head (issue 55):
 * its cost grows with what is new, not with the store. A change after the mark is caught as before; a change to a row
 * at or before it is {@code --full}'s to catch, and {@code --full} does; a mark the log does not confirm is not trusted.
 */
@ExtendWith(KafkaBrokerExtension.class)
class IncrementalVerifyTest {

    @DatabaseTest
    void eachVerifyStartsWhereTheLastFoundTheChainAsPublishedAndFullReadsEverything(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        String[] cli = CliRun.settings(h);
        List<ModelLoaded> first = new ArrayList<>();
        for (int release = 1; release <= 3; release++) {
            first.add(StoreHarness.load("edge-1", "r" + release, 2, 24 * release, false));
            first.add(StoreHarness.load("edge-2", "r" + release, 2, 24 * release + 1, false));
        }
        ingest(h, broker, first, 6);

        CliRun whole = CliRun.run(cli, "verify");
        assertThat(whole.exit()).as(whole.out() + whole.err()).isZero();
        assertThat(whole.out()).contains("2 deployments, 6 chained loads, checked against " + h.chain + ": every chain holds")
                .doesNotContain("from the last verify's marks");
        assertThat(h.count("SELECT COUNT(*) FROM chain_verifications WHERE seq = 3")).as("a mark per chain, at its published head").isEqualTo(2);

        // Two more loads of edge-1: the next verify reads those two alone.
        ingest(h, broker, List.of(StoreHarness.load("edge-1", "r4", 2, 24 * 4, true), StoreHarness.load("edge-1", "r5", 2, 24 * 5, false)), 8);
        CliRun since = CliRun.run(cli, "verify");
        assertThat(since.exit()).as(since.out() + since.err()).isZero();
        assertThat(since.out()).contains("ok      edge-1  2 entries after entry 3 (verified before, as published)")
                .contains("ok      edge-2  0 entries after entry 3").contains("2 of 2 chains checked from the last verify's marks on")
                .contains("2 deployments, 2 chained loads, checked against " + h.chain + ": every chain holds");

        // A row at or before the mark changed by hand: the check since the mark does not read it; --full does, and names it.
        try (Connection c = db.connect(); Statement s = c.createStatement()) {
            s.executeUpdate("UPDATE load_rows SET heap_bytes = heap_bytes + 1 WHERE deployment_id = 'edge-2' AND chain_seq = 1");
        }
        assertThat(CliRun.run(cli, "verify").exit()).as("not read since the mark").isZero();
        CliRun full = CliRun.run(cli, "verify", "--full");
        assertThat(full.exit()).isEqualTo(1);
        assertThat(full.out()).contains("BROKEN  edge-2  entry 1").contains("2 deployments, 8 chained loads");

        // A row after the mark changed by hand: the check since the mark reads it and names it.
        ingest(h, broker, List.of(StoreHarness.load("edge-1", "r6", 2, 24 * 6, false)), 9);
        try (Connection c = db.connect(); Statement s = c.createStatement()) {
            s.executeUpdate("UPDATE load_rows SET offheap_bytes = offheap_bytes + 1 WHERE deployment_id = 'edge-1' AND chain_seq = 6");
        }
        CliRun caught = CliRun.run(cli, "verify", "--deployment", "edge-1");
        assertThat(caught.exit()).as(caught.out()).isEqualTo(1);
        assertThat(caught.out()).contains("BROKEN  edge-1  entry 6");

        // A mark the published heads do not confirm (moved by hand past what was verified) is not trusted: the chain is read whole.
        try (Connection c = db.connect(); Statement s = c.createStatement()) {
            s.executeUpdate("UPDATE load_rows SET offheap_bytes = offheap_bytes - 1 WHERE deployment_id = 'edge-1' AND chain_seq = 6");
            s.executeUpdate("UPDATE chain_verifications SET seq = 9, entry_hash = 'ff' WHERE deployment_id = 'edge-1'");
        }
        CliRun distrusted = CliRun.run(cli, "verify", "--deployment", "edge-1");
        assertThat(distrusted.exit()).as(distrusted.out()).isZero();
        assertThat(distrusted.out()).contains("ok      edge-1  6 entries, head").doesNotContain("after entry");
    }

    /** Publishes the loads, runs the store until {@code chained} entries are in and their heads are on the chain topic. */
    private static void ingest(StoreHarness h, KafkaBroker broker, List<ModelLoaded> loads, int chained) throws Exception {
        h.publish(loads);
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM chain_entries") == chained);
        } // closing flushes the last heads to the chain topic
        await().atMost(Duration.ofSeconds(30)).until(() -> ChainLog.read(broker.clientConfig(), h.chain, h.group, Duration.ofSeconds(10))
                .heads().values().stream().mapToLong(heads -> heads.get(heads.size() - 1).seq()).sum() == chained);
    }
}
