package dev.placementaudit.store;

import dev.placementaudit.store.alerts.AlertOutbox;
import dev.placementaudit.store.ingest.BatchOutcome;
import dev.placementaudit.store.regression.Finding;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * The store's meters. {@code pa_store_load_bytes{deployment,model,release,domain}} is what the shipped Prometheus
 * rules watch: the resident bytes per domain of the latest complete load of each deployment, model and release.
 */
public final class StoreMetrics {
    private final MeterRegistry registry;
    private final DataSource database;
    private final MultiGauge loadBytes;
    private final Counter decisions;
    private final Counter loadsCompleted;
    private final Counter ingestFailures;
    private final Counter alertsPublished;

    public StoreMetrics(MeterRegistry registry, DataSource database) {
        this.registry = registry;
        this.database = database;
        this.loadBytes = MultiGauge.builder("pa.store.load.bytes").baseUnit("bytes")
                .description("resident bytes per domain of the latest complete load per deployment, model and release").register(registry);
        this.decisions = Counter.builder("pa.store.decisions").description("decisions stored").register(registry);
        this.loadsCompleted = Counter.builder("pa.store.loads.completed").register(registry);
        this.ingestFailures = Counter.builder("pa.store.ingest.failures").description("batches that failed to write and were retried").register(registry);
        this.alertsPublished = Counter.builder("pa.store.alerts.published").register(registry);
        refreshGauges();
    }

    public void committed(BatchOutcome outcome) {
        decisions.increment(outcome.decisions());
        loadsCompleted.increment(outcome.completed().size());
        outcome.detections().forEach(d -> d.findings().stream().map(Finding::kind).forEach(kind ->
                registry.counter("pa.store.findings", "kind", kind.name()).increment()));
        for (AlertOutbox.StoredAlert alert : outcome.alerts()) {
            registry.counter("pa.store.alerts", "kind", alert.kind(), "state", alert.suppressedBy() == null ? "raised" : "suppressed").increment();
        }
        if (!outcome.completed().isEmpty()) {
            refreshGauges();
        }
    }

    public void ingestFailure() {
        ingestFailures.increment();
    }

    public void deadLettered(String reason) {
        registry.counter("pa.store.dlq", "reason", reason).increment();
    }

    public void published(int count) {
        alertsPublished.increment(count);
    }

    /** Re-reads the per-deployment totals; called after loads complete, so gauges follow the projection. */
    public void refreshGauges() {
        List<MultiGauge.Row<?>> rows = new ArrayList<>();
        String sql = "SELECT l.deployment_id, l.model_id, l.release_name, l.heap_bytes, l.offheap_bytes, l.mapped_bytes FROM loads l "
                + "WHERE l.complete = TRUE AND l.occurred_at = (SELECT MAX(x.occurred_at) FROM loads x WHERE x.complete = TRUE "
                + "AND x.deployment_id = l.deployment_id AND x.model_id = l.model_id AND x.release_name = l.release_name)";
        try (Connection c = database.getConnection(); PreparedStatement s = c.prepareStatement(sql); ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
                Tags tags = Tags.of("deployment", rs.getString(1), "model", rs.getString(2), "release", rs.getString(3));
                rows.add(MultiGauge.Row.of(tags.and("domain", "HOST_HEAP"), rs.getLong(4)));
                rows.add(MultiGauge.Row.of(tags.and("domain", "HOST_OFFHEAP"), rs.getLong(5)));
                rows.add(MultiGauge.Row.of(tags.and("domain", "MMAP_FILE"), rs.getLong(6)));
            }
        } catch (SQLException e) {
            return;
        }
        loadBytes.register(rows, true);
    }
}
