package dev.placementaudit.store;

import dev.placementaudit.service.PhaseTimers;
import dev.placementaudit.store.alerts.AlertOutbox;
import dev.placementaudit.store.incidents.Incidents;
import dev.placementaudit.store.incidents.RuntimeIncidents;
import dev.placementaudit.store.ingest.BatchOutcome;
import dev.placementaudit.store.ingest.BatchPhase;
import dev.placementaudit.store.ingest.IngestListener;
import dev.placementaudit.store.query.MeterQueries;
import dev.placementaudit.store.regression.Finding;
import dev.placementaudit.store.regression.LoadRef;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/**
 * The store's meters. {@code pa_store_load_bytes{deployment,model,release,domain}}: the resident bytes per domain of the
 * latest complete load of each deployment, model and release. {@code pa_store_alert_delta_bytes{kind,deployment,model,
 * from_release,to_release}}: for each deployment and model whose latest complete load raised an alert no budget
 * covers, the bytes it moved; the row goes when a later load of that deployment and model raises none. The shipped
 * Prometheus rules fired on it before incidents. {@code pa_store_incident_deployments{incident,model,from_release,
 * to_release,kind}}: one row per open, unacknowledged incident, valued at the deployments showing its cause; the shipped
 * rules fire on it, so Alertmanager receives one alert per cause across the fleet, with a link that opens the incident.
 * {@code pa_store_observed_unplanned_bytes{deployment,model,domain}}: for each deployment and model, the latest observed
 * load's observed minus planned bytes per domain (heap, offheap, mapped; docs/observations.md): what the device actually
 * held that its plan does not account for (negative: planned but not seen, e.g. a mapping never made).
 */
public final class StoreMetrics implements IngestListener {
    private static final Logger LOG = LoggerFactory.getLogger(StoreMetrics.class);
    private final MeterRegistry registry;
    private final DataSource database;
    private final MultiGauge loadBytes;
    private final Counter decisions;
    private final Counter loadsCompleted;
    private final Counter stagedDecisions;
    private final Counter planTensorRows;
    private final Counter ingestFailures;
    private final Counter alertsPublished;
    /** Only the ingest thread writes it, but the gauge rows are read from the scrape thread. */
    private final Map<Tags, Latest> latest = new ConcurrentHashMap<>();
    private final MultiGauge alertDelta;
    /** Per deployment and model: the unsuppressed alerts of its latest compared load, by kind. */
    private final Map<List<String>, Map<String, AlertOutbox.StoredAlert>> openAlerts = new ConcurrentHashMap<>();
    /** When the load rows are registered again: rows were added (values of existing load rows change in place). */
    private final Republish loadGauges = new Republish(true);
    private final Republish alertGauges = new Republish(true);
    private final MultiGauge incidentDeployments;
    private long incidentsReadAt = System.nanoTime();
    private boolean incidentsMayHaveChanged;
    private static final long INCIDENTS_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(5);
    /** Even with no batch, how often the incidents are read again: an acknowledgement is made from another process. */
    private static final long INCIDENTS_QUIET_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(30);
    private final MultiGauge observedUnplanned;
    private final Republish observedGauges = new Republish(false);
    /** Per deployment and model, the latest observed load in the log: only the ingest thread writes it. */
    private final Map<List<String>, RuntimeIncidents.ObservedLoad> observed = new ConcurrentHashMap<>();
    private final PhaseTimers<BatchPhase> phaseTimers;
    private final Map<String, Counter> counters = new HashMap<>();

    public StoreMetrics(MeterRegistry registry, DataSource database) {
        this.registry = registry;
        this.database = database;
        this.loadBytes = MultiGauge.builder("pa.store.load.bytes").baseUnit("bytes")
                .description("resident bytes per domain of the latest complete load per deployment, model and release").register(registry);
        this.decisions = Counter.builder("pa.store.decisions").description("decision records ingested").register(registry);
        this.stagedDecisions = Counter.builder("pa.store.decisions.staged")
                .description("decision rows staged: of loads not whole in a batch whose plan is not stored, or without a plan digest").register(registry);
        this.planTensorRows = Counter.builder("pa.store.plan.tensor.rows")
                .description("plan tensor rows written: the tensors of plans first seen").register(registry);
        this.loadsCompleted = Counter.builder("pa.store.loads.completed").register(registry);
        this.ingestFailures = Counter.builder("pa.store.ingest.failures").description("batches that failed to write and were retried").register(registry);
        this.alertsPublished = Counter.builder("pa.store.alerts.published").register(registry);
        this.alertDelta = MultiGauge.builder("pa.store.alert.delta.bytes").baseUnit("bytes")
                .description("bytes moved by the alerts no budget covers, of the latest compared load per deployment and model").register(registry);
        this.incidentDeployments = MultiGauge.builder("pa.store.incident.deployments")
                .description("deployments whose latest load shows an open, unacknowledged incident's cause: one row per incident").register(registry);
        this.observedUnplanned = MultiGauge.builder("pa.store.observed.unplanned.bytes").baseUnit("bytes")
                .description("observed minus planned bytes per domain of the latest observed load per deployment and model").register(registry);
        this.phaseTimers = new PhaseTimers<>(registry, "pa.store.batch.phase", "a committed batch's time, by phase", BatchPhase.class);
        refreshGauges();
        refreshAlerts();
        refreshIncidents();
        refreshObserved();
    }

    @Override
    public void committed(BatchOutcome outcome) {
        outcome.phaseNanos().forEach((phase, nanos) -> phaseTimers.record(phase, nanos));
        decisions.increment(outcome.decisions());
        stagedDecisions.increment(outcome.stagedDecisions());
        planTensorRows.increment(outcome.planTensorRows());
        loadsCompleted.increment(outcome.completed().size());
        outcome.detections().forEach(d -> d.findings().stream().map(Finding::kind).forEach(kind -> counter("pa.store.findings", "kind",
                kind.name()).increment()));
        for (AlertOutbox.StoredAlert alert : outcome.alerts()) {
            counter("pa.store.alerts", "kind", alert.kind(), "state", alert.suppressedBy() == null ? "raised" : "suppressed").increment();
        }
        if (!outcome.detections().isEmpty()) {
            // A compared load replaces what its deployment and model showed: its own alerts, or none.
            Map<List<String>, Map<String, AlertOutbox.StoredAlert>> now = new LinkedHashMap<>();
            outcome.detections().forEach(d -> now.put(List.of(d.load().deploymentId(), d.load().modelId()), new HashMap<>()));
            outcome.alerts().stream().filter(a -> a.suppressedBy() == null).forEach(a -> now.get(List.of(a.deploymentId(), a.modelId()))
                    .put(a.kind(), a));
            now.forEach((key, byKind) -> {
                if (!sameRows(openAlerts.getOrDefault(key, Map.of()), byKind)) {
                    alertGauges.changed();
                }
                if (byKind.isEmpty()) {
                    openAlerts.remove(key);
                } else {
                    openAlerts.put(key, new ConcurrentHashMap<>(byKind));
                }
            });
            publishAlerts();
        }
        if (!outcome.observed().isEmpty()) {
            for (RuntimeIncidents.ObservedLoad load : outcome.observed()) {
                if (foldObserved(load)) {
                    observedGauges.changed();
                }
            }
            publishObserved();
        }
        if (!outcome.completed().isEmpty()) {
            updateGauges(outcome.completed());
            incidentsMayHaveChanged = true;
            if (!outcome.incidents().isEmpty()) {
                refreshIncidents();
            }
        }
    }

    /** Whether two sets of alerts show as the same gauge rows (same labels, same value). */
    private static boolean sameRows(Map<String, AlertOutbox.StoredAlert> a, Map<String, AlertOutbox.StoredAlert> b) {
        if (!a.keySet().equals(b.keySet())) {
            return false;
        }
        for (Map.Entry<String, AlertOutbox.StoredAlert> e : a.entrySet()) {
            AlertOutbox.StoredAlert x = e.getValue();
            AlertOutbox.StoredAlert y = b.get(e.getKey());
            if (!Objects.equals(x.fromRelease(), y.fromRelease()) || !x.release().equals(y.release()) || x.deltaBytes() != y.deltaBytes()) {
                return false;
            }
        }
        return true;
    }

    /** A counter by name and tags, looked up once: the registry's own lookup hashes every tag on every call. */
    private Counter counter(String name, String... tags) {
        return counters.computeIfAbsent(name + "|" + String.join("|", tags), k -> registry.counter(name, tags));
    }

    /**
     * Registers gauge rows whose registering was deferred (many rows, registered less than 5 s ago): the ingest loop
     * calls it after every poll, so a change the last batch made shows within 5 s even when no batch follows.
     */
    @Override
    public void publishDeferred() {
        publishGauges();
        publishAlerts();
        publishObserved();
        long now = System.nanoTime();
        if (now - incidentsReadAt > (incidentsMayHaveChanged ? INCIDENTS_INTERVAL_NANOS : INCIDENTS_QUIET_INTERVAL_NANOS)) {
            refreshIncidents();
        }
    }

    /**
     * One row per open, unacknowledged incident, valued at how many deployments show it: read from the incidents (a
     * handful of rows, whatever the fleet's size), so the series follow causes, not deployments.
     */
    private void refreshIncidents() {
        incidentsReadAt = System.nanoTime();
        incidentsMayHaveChanged = false;
        List<Incidents.Incident> paging;
        try (Connection c = database.getConnection()) {
            paging = Incidents.paging(c, Instant.now());
        } catch (SQLException e) {
            return;
        }
        incidentDeployments.register(paging.stream().map(i -> MultiGauge.Row.of(Tags.of("incident", i.incidentId(),
                "model", i.modelId(), "from_release", i.fromRelease(), "to_release", i.toRelease(), "kind", i.primaryKind()), i.showing()))
                .collect(Collectors.toList()), true);
    }

    /** Keeps the latest observed load in the log per deployment and model; whether it replaced what was kept. */
    private boolean foldObserved(RuntimeIncidents.ObservedLoad load) {
        List<String> key = List.of(load.load().deploymentId(), load.load().modelId());
        RuntimeIncidents.ObservedLoad kept = observed.get(key);
        if (kept == null || LoadRef.IN_LOG_ORDER.compare(load.load(), kept.load()) >= 0) {
            observed.put(key, load);
            return true;
        }
        return false;
    }

    /**
     * Registers the observed rows that changed: above {@link Republish#EAGER_ROWS} rows at most once per
     * {@link Republish#INTERVAL_NANOS}, as for the load gauges (a fleet's rows re-registered after every batch would cost
     * the ingest thread more than the batch).
     */
    private void publishObserved() {
        if (!observedGauges.due(() -> observed.size() * 3)) {
            return;
        }
        List<MultiGauge.Row<?>> rows = new ArrayList<>();
        observed.values().forEach(o -> {
            Tags tags = Tags.of("deployment", o.load().deploymentId(), "model", o.load().modelId());
            if (o.heap() != null) {
                rows.add(MultiGauge.Row.of(tags.and("domain", "heap"), o.heap() - o.plannedHeap()));
            }
            if (o.offHeap() != null) {
                rows.add(MultiGauge.Row.of(tags.and("domain", "offheap"), o.offHeap() - o.plannedOffHeap()));
            }
            if (o.mapped() != null) {
                rows.add(MultiGauge.Row.of(tags.and("domain", "mapped"), o.mapped() - o.plannedMapped()));
            }
        });
        observedUnplanned.register(rows, true);
    }

    /** Every deployment and model's latest observed load: once, at start. */
    private void refreshObserved() {
        try {
            MeterQueries.observedLoads(database, this::foldObserved);
        } catch (SQLException e) {
            LOG.warn("pa_store_observed_unplanned_bytes starts empty: reading the observed loads failed ({}); batches fill it", e.toString());
            return;
        }
        observedGauges.changed();
        publishObserved();
    }

    @Override
    public void ingestFailure() {
        ingestFailures.increment();
    }

    @Override
    public void summariesPaused() {
        counter("pa.store.summaries.paused").increment();
    }

    @Override
    public void deadLettered(String reason) {
        registry.counter("pa.store.dlq", "reason", reason).increment();
    }

    @Override
    public void published(int count) {
        alertsPublished.increment(count);
    }

    /** Reads the latest complete load, in log order, of every deployment, model and release (its release head): once, at start. */
    public void refreshGauges() {
        try {
            for (MeterQueries.HeadTotals head : MeterQueries.releaseHeads(database)) {
                fold(Tags.of("deployment", head.deploymentId(), "model", head.modelId(), "release", head.release()), head.position(),
                        head.heapBytes(), head.offHeapBytes(), head.mappedBytes());
            }
        } catch (SQLException e) {
            LOG.warn("pa_store_load_bytes starts empty: reading the release heads failed ({}); batches fill it", e.toString());
            return;
        }
        publishGauges();
    }

    /**
     * Folds the loads a batch just completed into the gauges, from the totals the batch had in hand: no query (a scan of
     * every load after every batch would make ingestion slower the longer the history grows).
     */
    private void updateGauges(List<BatchOutcome.CompletedLoad> completed) {
        for (BatchOutcome.CompletedLoad done : completed) {
            LoadRef load = done.load();
            fold(Tags.of("deployment", load.deploymentId(), "model", load.modelId(), "release", load.release()), load.position(),
                    done.heapBytes(), done.offHeapBytes(), done.mappedBytes());
        }
        publishGauges();
    }

    /** Keeps the totals of the load last in the log per deployment, model and release; a new row is registered with the next publish. */
    private void fold(Tags tags, LoadRef.Position position, long heap, long offHeap, long mapped) {
        Latest row = latest.get(tags);
        if (row == null) {
            latest.put(tags, new Latest(position, heap, offHeap, mapped));
            loadGauges.changed();
        } else if (position.compareTo(row.position) >= 0) {
            row.set(position, heap, offHeap, mapped);
        }
    }

    /** The open alerts of the latest compared load of every deployment and model: once, at start. */
    private void refreshAlerts() {
        try {
            for (AlertOutbox.StoredAlert alert : MeterQueries.openAlerts(database)) {
                openAlerts.computeIfAbsent(List.of(alert.deploymentId(), alert.modelId()), k -> new ConcurrentHashMap<>()).put(alert.kind(), alert);
            }
        } catch (SQLException e) {
            LOG.warn("pa_store_alert_delta_bytes starts empty: reading the open alerts failed ({}); batches fill it", e.toString());
            return;
        }
        publishAlerts();
    }

    /** As {@link #publishGauges}: every open alert's row, re-registered at most every 5 s once there are many. */
    private void publishAlerts() {
        if (!alertGauges.due(() -> openAlerts.values().stream().mapToInt(Map::size).sum())) {
            return;
        }
        List<MultiGauge.Row<?>> rows = new ArrayList<>();
        openAlerts.values().forEach(byKind -> byKind.values().forEach(a -> rows.add(MultiGauge.Row.of(Tags.of("kind", a.kind(),
                "deployment", a.deploymentId(), "model", a.modelId(), "from_release", a.fromRelease() == null ? "" : a.fromRelease(),
                "to_release", a.release()), Math.abs(a.deltaBytes())))));
        alertDelta.register(rows, true);
    }

    /**
     * Re-registers every row of pa_store_load_bytes: a cost that grows with the fleet (three rows per deployment,
     * model and release). Above {@link Republish#EAGER_ROWS} rows it is paid at most once per {@link Republish#INTERVAL_NANOS}:
     * a scrape sees values at most that old, and the ingest thread does not spend its time re-registering a fleet.
     */
    private void publishGauges() {
        if (!loadGauges.due(() -> latest.size() * 3)) {
            return;
        }
        List<MultiGauge.Row<?>> rows = new ArrayList<>();
        latest.forEach((tags, load) -> {
            rows.add(MultiGauge.Row.of(tags.and("domain", "HOST_HEAP"), load, l -> l.heapBytes));
            rows.add(MultiGauge.Row.of(tags.and("domain", "HOST_OFFHEAP"), load, l -> l.offHeapBytes));
            rows.add(MultiGauge.Row.of(tags.and("domain", "MMAP_FILE"), load, l -> l.mappedBytes));
        });
        loadBytes.register(rows, true);
    }

    /**
     * A gauge row's values, updated in place: a load that replaces the latest of its deployment, model and release
     * changes what the registered rows read, without registering them again.
     */
    private static final class Latest {
        private volatile LoadRef.Position position;
        private volatile long heapBytes;
        private volatile long offHeapBytes;
        private volatile long mappedBytes;

        Latest(LoadRef.Position position, long heapBytes, long offHeapBytes, long mappedBytes) {
            set(position, heapBytes, offHeapBytes, mappedBytes);
        }

        void set(LoadRef.Position position, long heapBytes, long offHeapBytes, long mappedBytes) {
            this.position = position;
            this.heapBytes = heapBytes;
            this.offHeapBytes = offHeapBytes;
            this.mappedBytes = mappedBytes;
        }
    }
}
