package dev.placementaudit.store.ingest;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.store.alerts.AlertOutbox;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.regression.GrowthRule;
import dev.placementaudit.store.regression.RegressionDetector;
import dev.placementaudit.testkit.PostgresServer;
import dev.placementaudit.testkit.SampleEvents;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.resolution.Provenance;
import dev.placementaudit.resolution.ResolvedLoad;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The write skew two store instances meet, forced: one transaction holds a load's decisions, uncommitted, while
 * another writes its summary. Each alone cannot see the whole load; the deployment lock makes the second wait for the
 * first and then see it, so the load completes once, in the second, and is compared and chained once.
 */
class ConcurrentCompletionTest {
    private static final GrowthRule OFF_HEAP = new GrowthRule("off-heap", 10, 1 << 20);
    private static final GrowthRule HEAP = new GrowthRule("heap", 10, 1 << 20);
    private final EventSerde<AllocationDecided> decisions = EventSerde.of(AllocationDecided.class);
    private final EventSerde<LoadResolved> summaries = EventSerde.of(LoadResolved.class);
    private final LoadResolution resolution = new LoadResolution("0.1.0/skainet-1192");

    @Test
    void aLoadWhoseHalvesAreWrittenConcurrentlyCompletesExactlyOnce() throws Exception {
        try (TestDatabase pg = PostgresServer.fromEnvironment().createIsolatedSchema();
             AuditDatabase db = AuditDatabase.open(pg.jdbcUrl(), pg.user(), pg.password(), null, 4)) {
            ProjectionWriter first = writer(db);
            ProjectionWriter second = writer(db);
            ModelLoaded r1 = SampleEvents.edgeLoad("phone-1", "r1", 2);
            ModelLoaded r2 = ModelLoaded.newBuilder(SampleEvents.edgeLoad("phone-1", "r2", 2)).setOccurredAt(r1.getOccurredAt().plusSeconds(3600))
                    .setTensors(dequantized(SampleEvents.edgeLoad("phone-1", "r2", 2))).build();
            ResolvedLoad before = resolve(r1, 0);
            ResolvedLoad after = resolve(r2, 1);
            long[] offsets = {0, 0};
            first.write(first.decode(records(before, offsets, true, true)));
            assertThat(count(db, "SELECT COUNT(*) FROM loads WHERE complete = TRUE")).isEqualTo(1);

            CountDownLatch holding = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            first.beforeCommit(() -> {
                holding.countDown();
                await(release);
            });
            List<Decoded> decisionsOnly = first.decode(records(after, offsets, true, false));
            List<Decoded> summaryOnly = second.decode(records(after, offsets, false, true));
            CompletableFuture<BatchOutcome> a = CompletableFuture.supplyAsync(() -> write(first, decisionsOnly));
            assertThat(holding.await(30, TimeUnit.SECONDS)).isTrue();
            CompletableFuture<BatchOutcome> b = CompletableFuture.supplyAsync(() -> write(second, summaryOnly));
            Thread.sleep(500);
            assertThat(b).as("the summary's transaction waits for the decisions' one").isNotDone();
            release.countDown();

            BatchOutcome decisionsOutcome = a.get(30, TimeUnit.SECONDS);
            BatchOutcome summaryOutcome = b.get(30, TimeUnit.SECONDS);
            assertThat(decisionsOutcome.completed()).as("it could not see the summary").isEmpty();
            assertThat(summaryOutcome.completed()).as("it saw the decisions once they committed").hasSize(1);
            assertThat(count(db, "SELECT COUNT(*) FROM loads WHERE complete = TRUE")).isEqualTo(2);
            assertThat(count(db, "SELECT COUNT(*) FROM findings WHERE load_id = '" + r2.getLoadId() + "' AND kind = 'LOST_MAPPING'")).isEqualTo(2);
            assertThat(count(db, "SELECT COUNT(*) FROM alerts WHERE to_load_id = '" + r2.getLoadId() + "'")).isEqualTo(2);
            assertThat(count(db, "SELECT MAX(seq) FROM chain_entries WHERE deployment_id = 'phone-1'")).isEqualTo(2);
        }
    }

    private static List<TensorInfo> dequantized(ModelLoaded load) {
        List<TensorInfo> tensors = new ArrayList<>();
        for (TensorInfo t : load.getTensors()) {
            tensors.add(t.getName().startsWith("blk.") ? TensorInfo.newBuilder(t).setForm(SampleEvents.dequantizedMapped()).build() : t);
        }
        return tensors;
    }

    private static ProjectionWriter writer(AuditDatabase db) {
        return new ProjectionWriter(db, "g", "decided", "resolved", new RegressionDetector(db.dialect(), OFF_HEAP, HEAP),
                new AlertOutbox(db.dialect(), OFF_HEAP, HEAP), Clock.systemUTC());
    }

    private ResolvedLoad resolve(ModelLoaded load, long offset) {
        return resolution.resolve(new LoadValidator(1_000).validate(load), new Provenance("model-loads", 0, offset), Instant.now());
    }

    /** The load's records as the store would poll them: decisions from partition 0 of "decided", the summary from "resolved". */
    private List<ConsumerRecord<byte[], byte[]>> records(ResolvedLoad load, long[] offsets, boolean withDecisions, boolean withSummary) {
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        if (withDecisions) {
            for (AllocationDecided d : load.decisions()) {
                records.add(new ConsumerRecord<>("decided", 0, offsets[0]++, new byte[0], decisions.encode(d)));
            }
        }
        if (withSummary) {
            records.add(new ConsumerRecord<>("resolved", 0, offsets[1]++, new byte[0], summaries.encode(load.summary())));
        }
        return records;
    }

    private static BatchOutcome write(ProjectionWriter writer, List<Decoded> batch) {
        try {
            return writer.write(batch);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static long count(AuditDatabase db, String sql) throws Exception {
        try (Connection c = db.dataSource().getConnection(); ResultSet rs = c.createStatement().executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
