package dev.placementaudit.store.ingest;

import dev.placementaudit.store.alerts.AlertOutbox;
import dev.placementaudit.store.chain.ChainHead;
import dev.placementaudit.store.chain.HashChain;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.incidents.IncidentLedger;
import dev.placementaudit.store.incidents.RuntimeIncidents;
import dev.placementaudit.store.plans.StoredPlans;
import dev.placementaudit.store.regression.Detection;
import dev.placementaudit.store.regression.GrowthRule;
import dev.placementaudit.store.regression.LoadRef;
import dev.placementaudit.store.regression.RegressionDetector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes one poll's records into the projection in a single database transaction, phase by phase: the rows (decisions
 * matched against their plans or staged, new plans, dead-letter rows, the consumer offsets they advance to); the locks of
 * the deployments touched; the completion of the loads they finish, in log order; those loads' entries in the hash chain
 * ({@link HashChain}); their comparison with their predecessors, findings, alerts, incidents and release heads; what their
 * runtimes said of them (observations, divergences: {@link RuntimeIncidents}); the commit. Either
 * all of it commits or none of it; on restart the consumer seeks to the offsets stored here, so nothing is lost or applied
 * twice (docs/adr/0001), and what it writes is a function of the log (docs/adr/0006).
 */
public final class ProjectionWriter {
    private final AuditDatabase database;
    private final RegressionDetector detector;
    private final AlertOutbox outbox;
    private final Clock clock;
    private final RecordDecoder decoder;
    private final DecisionRows decisionRows;
    private final DeadLetterRows deadLetterRows;
    private final StoredOffsets offsets;
    private final DeploymentLocks locks;
    private final LoadContexts contexts;
    private final LoadCompletion completion;
    private final IncidentLedger incidents;
    private final RuntimeIncidents runtime;
    private final ObservationRows observationRows;
    private final UnstorableRecords unstorable = new UnstorableRecords(items -> apply(items, false));
    /** Runs just before a batch commits; tests hold a transaction open there to race another against it. */
    private volatile Runnable beforeCommit = () -> { };

    public ProjectionWriter(AuditDatabase database, String groupId, String decisionsTopic, String resolvedTopic, RegressionDetector detector,
                            AlertOutbox outbox, Clock clock) {
        this(database, groupId, decisionsTopic, resolvedTopic, OBSERVATIONS_TOPIC, UNPLANNED_OFFHEAP, detector, outbox, clock);
    }

    /** The observations topic and the rule of unplanned off-heap when none is configured (docs/configuration.md). */
    public static final String OBSERVATIONS_TOPIC = "load-observations";
    public static final GrowthRule UNPLANNED_OFFHEAP = new GrowthRule("unplanned off-heap", 10, 64L << 20);

    /**
     * @param observationsTopic where runtimes publish what they measured after their loads
     * @param unplannedOffHeap  how much more off-heap than planned a runtime may hold before it is a finding
     */
    public ProjectionWriter(AuditDatabase database, String groupId, String decisionsTopic, String resolvedTopic, String observationsTopic,
                            GrowthRule unplannedOffHeap, RegressionDetector detector, AlertOutbox outbox, Clock clock) {
        this.database = database;
        this.detector = detector;
        this.outbox = outbox;
        this.clock = clock;
        Dialect dialect = database.dialect();
        StoredPlans plans = new StoredPlans(dialect);
        this.decoder = new RecordDecoder(decisionsTopic, resolvedTopic, observationsTopic, detector.plans());
        this.decisionRows = new DecisionRows(dialect, plans, detector.plans());
        this.deadLetterRows = new DeadLetterRows(dialect);
        this.offsets = new StoredOffsets(dialect, groupId);
        this.locks = new DeploymentLocks(dialect);
        this.contexts = new LoadContexts(dialect);
        this.completion = new LoadCompletion(plans, detector, contexts);
        this.incidents = new IncidentLedger(dialect);
        this.runtime = new RuntimeIncidents(dialect, unplannedOffHeap);
        this.observationRows = new ObservationRows(dialect, observationsTopic, deadLetterRows);
    }

    /** Decodes and checks each record; nothing is written yet. */
    public List<Decoded> decode(List<ConsumerRecord<byte[], byte[]>> records) {
        return decoder.decode(records);
    }

    /**
     * The batch with each record that does not belong where it says turned into a reject for the dead letters (before
     * they are sent and the batch is written), read in a transaction of its own: an observation of a stored load that
     * names another deployment ({@link ObservationRows#bind}), a summary or decision under a load id that stands for
     * another load ({@link LoadIds}).
     */
    public List<Decoded> bind(List<Decoded> batch) throws SQLException {
        try (Connection c = database.transaction()) {
            try {
                List<Decoded> bound = LoadIds.bind(c, batch);
                return bound.stream().anyMatch(item -> item instanceof Decoded.Observation) ? observationRows.bind(c, bound) : bound;
            } finally {
                c.rollback();
            }
        }
    }

    /** Writes the batch and its offsets in one transaction; a record the database refuses fails it all (see {@link #isolateUnstorable}). */
    public BatchOutcome write(List<Decoded> batch) throws SQLException {
        return apply(batch, true);
    }

    /**
     * The batch with each record the database refuses as content replaced by a {@link Decoded.Reject} (found by bisecting
     * it in trial transactions that are rolled back); an outage during the search is thrown.
     *
     * @param refusal the content error writing the whole batch met
     * @throws IllegalArgumentException when {@code refusal} is no content error (an outage is waited out, not bisected)
     */
    public List<Decoded> isolateUnstorable(List<Decoded> batch, SQLException refusal) throws SQLException {
        return unstorable.isolate(batch, refusal);
    }

    /** Whether the database refuses content as this error says, the one to bisect on; false for an outage. */
    public static boolean isContentError(SQLException e) {
        return SqlFailures.contentState(e).isPresent();
    }

    private BatchOutcome apply(List<Decoded> batch, boolean commit) throws SQLException {
        Instant now = clock.instant();
        Phases phases = new Phases();
        try (Connection c = database.transaction()) {
            try {
                BatchRecords records = BatchRecords.of(batch);
                DecisionRows.Written rows = decisionRows.write(c, records.decisionsByLoad());
                deadLetterRows.record(c, batch, now);
                observationRows.writeObservations(c, records.observations().values());
                observationRows.writeDivergences(c, records.summaries().values());
                offsets.store(c, batch);
                phases.end(BatchPhase.ROWS);

                DeploymentLocks.Locked locked = locks.lock(c, records.deployments(), records.decidedThrough());
                phases.end(BatchPhase.LOCK);

                LoadCompletion.Completed batchCompleted = completion.complete(c, records.touched(), records.deployments(), records.summaries(),
                        locked, now);
                List<StoredLoad.Completion> completions = batchCompleted.completions();
                decisionRows.dropStragglers(c, rows.stagedLoads(), completions.stream().map(done -> done.load().loadId()).toList());
                // Observations that came before their load and name another deployment: dead letters, before any finding is drawn.
                List<String> detached = observationRows.detachOthers(c, completions.stream().map(done -> done.load().loadId()).toList(), now);
                phases.end(BatchPhase.COMPLETE);

                // Each completed load's chain entry went on its row as it was written; the heads move on in the lock rows.
                List<ChainHead> heads = batchCompleted.chainHeads();
                locks.record(c, locked, heads);
                phases.end(BatchPhase.CHAIN);

                List<Detection> detections = new ArrayList<>();
                for (StoredLoad.Completion done : completions) {
                    if (done.previous() != null) {
                        detections.add(detector.compare(c, done.previous(), done.load()));
                    }
                }
                detector.storeFindings(c, detections);
                List<AlertOutbox.StoredAlert> alerts = outbox.record(c, detections, now);
                List<LoadRef> completed = completions.stream().map(StoredLoad.Completion::load).toList();
                Map<String, Detection> byLoad = new HashMap<>();
                detections.forEach(d -> byLoad.put(d.load().loadId(), d));
                List<IncidentLedger.Change> incidentChanges = new ArrayList<>(incidents.record(c, completed, byLoad, now));
                phases.end(BatchPhase.DETECT);

                // What runtimes said of their loads: drawn for the loads completed now and those whose observation came now.
                RuntimeIncidents.Result runtimeResult = runtime.record(c, completed, records.observations().keySet(), now);
                incidentChanges.addAll(runtimeResult.changes());
                phases.end(BatchPhase.RUNTIME);

                if (commit) {
                    beforeCommit.run();
                    c.commit();
                    contexts.committed();
                } else {
                    c.rollback();
                    contexts.rolledBack();
                }
                phases.end(BatchPhase.COMMIT);
                return new BatchOutcome(records.decisionRecords(), records.summaryRecords(), rows.stagedRows(), rows.planRows(),
                        completions.stream().map(done -> new BatchOutcome.CompletedLoad(done.load(), done.heapBytes(), done.offHeapBytes(),
                                done.mappedBytes())).toList(), detections, alerts, incidentChanges, heads, phases.nanos(), runtimeResult.observed(), detached);
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                contexts.rolledBack();
                throw e;
            }
        }
    }

    /** For tests: runs just before each batch commits. */
    void beforeCommit(Runnable hook) {
        this.beforeCommit = hook;
    }

    /** Every deployment's chain head as committed. */
    public List<ChainHead> chainHeads() throws SQLException {
        try (Connection c = database.dataSource().getConnection()) {
            return HashChain.heads(c);
        }
    }

    /** The offsets this group has stored for the partitions; absent ones have never been written. */
    public Map<TopicPartition, Long> storedOffsets(Collection<TopicPartition> partitions) throws SQLException {
        return offsets.read(database.dataSource(), partitions);
    }

    /** Where a batch's time went, phase by phase (pa_store_batch_phase_seconds): what a store that falls behind spends it on. */
    private static final class Phases {
        private final Map<BatchPhase, Long> nanos = new EnumMap<>(BatchPhase.class);
        private long since = System.nanoTime();

        void end(BatchPhase phase) {
            long now = System.nanoTime();
            nanos.put(phase, now - since);
            since = now;
        }

        Map<BatchPhase, Long> nanos() {
            return nanos;
        }
    }
}
