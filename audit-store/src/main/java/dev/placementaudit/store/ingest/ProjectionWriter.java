package dev.placementaudit.store.ingest;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.schemas.PlanDigest;
import dev.placementaudit.schemas.UndecodableEventException;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.store.alerts.AlertOutbox;
import dev.placementaudit.store.chain.ChainHead;
import dev.placementaudit.store.chain.HashChain;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.regression.Detection;
import dev.placementaudit.store.regression.LoadRef;
import dev.placementaudit.store.regression.RegressionDetector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Writes one poll's records into the projection in a single database transaction: the decision and load rows
 * (idempotent on their ids), the consumer offsets they advance to, completion of the loads they finish, and the
 * findings and alerts of those loads, and their entries in the hash chain ({@link HashChain}). Either all of it commits or none of it; on restart the consumer seeks to
 * the offsets stored here, so nothing is lost or applied twice.
 */
public final class ProjectionWriter {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ProjectionWriter.class);
    private static final List<String> OFFSET_COLUMNS = List.of("consumer_group", "topic", "partition_id", "next_offset");
    private static final List<String> OFFSET_TYPES = List.of("VARCHAR(200)", "VARCHAR(249)", "INTEGER", "BIGINT");
    private static final List<String> DEAD_LETTER_COLUMNS = List.of("source_topic", "source_partition", "source_offset", "load_id", "reason",
            "detail", "error", "dead_lettered_at");
    private static final List<String> DEAD_LETTER_TYPES = List.of("VARCHAR(249)", "INTEGER", "BIGINT", "VARCHAR(36)", "VARCHAR(40)",
            "VARCHAR(200)", "VARCHAR(2000)", "TIMESTAMP WITH TIME ZONE");
    /** A load id is kept on a dead letter only when it is one: the id itself may be what was refused. */
    private static final java.util.regex.Pattern UUID_TEXT = java.util.regex.Pattern.compile("[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}");

    private final AuditDatabase database;
    private final String groupId;
    private final String decisionsTopic;
    private final String resolvedTopic;
    private final RegressionDetector detector;
    private final AlertOutbox outbox;
    private final Clock clock;
    private final String insertDecision;
    private final String upsertOffset;
    private final String upsertDeadLetter;
    private final String insertDeploymentLock;
    private final StoredPlans plans;
    private final LoadCompletion completion;
    private final String recordDecidedThrough;
    /** Each recent plan's tensors, as {@link PlanDigest#values}: what a decision that names the plan must carry. */
    private final Map<String, List<Object[]>> planValues = java.util.Collections.synchronizedMap(
            dev.placementaudit.store.regression.PlanCache.lru(64));
    /** Runs just before a batch commits; tests hold a transaction open there to race another against it. */
    private volatile Runnable beforeCommit = () -> { };
    private final EventSerde<AllocationDecided> decisions = EventSerde.of(AllocationDecided.class);
    private final EventSerde<LoadResolved> summaries = EventSerde.of(LoadResolved.class);

    public ProjectionWriter(AuditDatabase database, String groupId, String decisionsTopic, String resolvedTopic, RegressionDetector detector,
                            AlertOutbox outbox, Clock clock) {
        this.database = database;
        this.groupId = groupId;
        this.decisionsTopic = decisionsTopic;
        this.resolvedTopic = resolvedTopic;
        this.detector = detector;
        this.outbox = outbox;
        this.clock = clock;
        Dialect dialect = database.dialect();
        this.insertDecision = dialect.insertIgnoringDuplicates("decisions", StoredDecision.COLUMNS, StoredDecision.TYPES, "decision_id");
        this.upsertOffset = dialect.upsert("ingest_offsets", OFFSET_COLUMNS, OFFSET_TYPES, List.of("consumer_group", "topic", "partition_id"));
        this.upsertDeadLetter = dialect.upsert("dead_letters", DEAD_LETTER_COLUMNS, DEAD_LETTER_TYPES,
                List.of("source_topic", "source_partition", "source_offset"));
        this.plans = new StoredPlans(dialect);
        this.completion = new LoadCompletion(plans, detector);
        this.recordDecidedThrough = "UPDATE deployment_locks SET decided_through = CASE WHEN decided_through IS NULL OR decided_through < ? "
                + "THEN ? ELSE decided_through END WHERE deployment_id = ?";
        this.insertDeploymentLock = dialect.insertIgnoringDuplicates("deployment_locks", List.of("deployment_id"), List.of("VARCHAR(200)"),
                "deployment_id");
    }

    /** Decodes and checks each record; nothing is written yet. */
    public List<Decoded> decode(List<ConsumerRecord<byte[], byte[]>> records) {
        List<Decoded> decoded = new ArrayList<>(records.size());
        for (ConsumerRecord<byte[], byte[]> record : records) {
            decoded.add(decode(record));
        }
        checkAgainstKnownPlans(decoded);
        return decoded;
    }

    /**
     * Checks, value by value, each decision that names a plan whose values are at hand against that plan's tensor,
     * and marks those that carry it ({@link Decoded.Decision#checkedPlan}): the comparison runs here, on the thread
     * that decodes ahead, instead of inside the batch's transaction. A decision not marked is checked when written.
     */
    private void checkAgainstKnownPlans(List<Decoded> decoded) {
        for (int i = 0; i < decoded.size(); i++) {
            if (decoded.get(i) instanceof Decoded.Decision decision) {
                // Only well-formed digests are keys: a lookup needs no check of its own.
                String digest = decision.event().getPlanDigest();
                List<Object[]> tensors = digest == null ? null : planValues.get(digest);
                if (tensors != null && decision.event().getTensorCount() == tensors.size() && carries(tensors, decision.event())) {
                    decoded.set(i, new Decoded.Decision(decision.record(), decision.event(), digest));
                }
            }
        }
    }

    private Decoded decode(ConsumerRecord<byte[], byte[]> record) {
        try {
            if (record.topic().equals(decisionsTopic)) {
                AllocationDecided event = decisions.decode(record.value());
                String overflow = StoredDecision.overflow(event);
                return overflow == null ? new Decoded.Decision(record, event)
                        : new Decoded.Reject(record, DeadLetter.Reason.UNSTORABLE, "COLUMN_OVERFLOW", "cannot store " + overflow, event.getLoadId());
            }
            if (record.topic().equals(resolvedTopic)) {
                LoadResolved event = summaries.decode(record.value());
                String overflow = StoredLoad.overflow(event);
                return overflow == null ? new Decoded.Summary(record, event)
                        : new Decoded.Reject(record, DeadLetter.Reason.UNSTORABLE, "COLUMN_OVERFLOW", "cannot store " + overflow,
                        event.getLoadId().toString());
            }
            throw new IllegalArgumentException("record from unexpected topic " + record.topic());
        } catch (UndecodableEventException e) {
            return new Decoded.Reject(record, DeadLetter.Reason.UNDECODABLE, e.reason().name(), e.getMessage());
        }
    }

    /** Writes the batch and its offsets in one transaction; a record the database refuses fails it all (see {@link #isolateUnstorable}). */
    public BatchOutcome write(List<Decoded> batch) throws SQLException {
        return apply(batch, true);
    }

    /**
     * Finds, by bisecting the batch in trial transactions that are rolled back, each record the database refuses as
     * content, and returns the batch with each such record replaced by a {@link Decoded.Reject} that carries the
     * SQLSTATE and the database's message. {@code refusal} is the content error writing the whole batch met, so the
     * search starts from its halves. A few trials per refused record (about two per halving) buy that one bad record
     * never stops the rest. An outage during the search is thrown.
     *
     * @throws IllegalArgumentException when {@code refusal} is no content error (an outage is waited out, not bisected)
     */
    public List<Decoded> isolateUnstorable(List<Decoded> batch, SQLException refusal) throws SQLException {
        if (SqlFailures.contentState(refusal).isEmpty()) {
            throw new IllegalArgumentException("not a content error: " + refusal);
        }
        List<Decoded> isolated = new ArrayList<>(batch);
        bisect(isolated, 0, isolated.size(), Optional.of(refusal));
        return isolated;
    }

    /** Whether the database refuses content as this error says, the one to bisect on; false for an outage. */
    public static boolean isContentError(SQLException e) {
        return SqlFailures.contentState(e).isPresent();
    }

    private void bisect(List<Decoded> batch, int from, int to, Optional<SQLException> known) throws SQLException {
        Optional<SQLException> refused = known.isPresent() ? known : trial(batch.subList(from, to));
        if (refused.isEmpty()) {
            return;
        }
        if (to - from == 1) {
            Decoded item = batch.get(from);
            String state = SqlFailures.contentState(refused.get()).orElseThrow();
            batch.set(from, new Decoded.Reject(item.record(), DeadLetter.Reason.UNSTORABLE, "SQLSTATE " + state, SqlFailures.message(refused.get()),
                    loadId(item)));
            return;
        }
        int middle = (from + to) >>> 1;
        bisect(batch, from, middle, Optional.empty());
        bisect(batch, middle, to, Optional.empty());
    }

    /** Writes and rolls back: empty when the database takes the items, its content error when it refuses them. */
    private Optional<SQLException> trial(List<Decoded> items) throws SQLException {
        try {
            apply(List.copyOf(items), false);
            return Optional.empty();
        } catch (SQLException e) {
            if (SqlFailures.contentState(e).isPresent()) {
                return Optional.of(e);
            }
            throw e;
        }
    }

    private static String loadId(Decoded item) {
        if (item instanceof Decoded.Decision decision) {
            return decision.event().getLoadId();
        }
        if (item instanceof Decoded.Summary summary) {
            return summary.event().getLoadId().toString();
        }
        return ((Decoded.Reject) item).loadId();
    }

    private BatchOutcome apply(List<Decoded> batch, boolean commit) throws SQLException {
        Instant now = clock.instant();
        Phases phases = new Phases();
        try (Connection c = database.transaction()) {
            try {
                int decisionRecords = 0;
                int summaryRows = 0;
                Set<String> touched = new LinkedHashSet<>();
                Set<String> deployments = new java.util.TreeSet<>();
                Map<String, List<Decoded.Decision>> decisionsByLoad = new LinkedHashMap<>();
                Map<String, Long> decidedThrough = new HashMap<>();
                Map<String, Decoded.Summary> summaries = new LinkedHashMap<>();
                // A load's decisions come one after another (one partition, published together): the group is looked
                // up again only when the load changes.
                String lastLoadId = null;
                List<Decoded.Decision> group = null;
                for (Decoded item : batch) {
                    if (item instanceof Decoded.Decision decision) {
                        String loadId = decision.event().getLoadId();
                        if (!loadId.equals(lastLoadId)) {
                            group = decisionsByLoad.get(loadId);
                            lastLoadId = loadId;
                        }
                        if (group == null) {
                            group = new ArrayList<>();
                            decisionsByLoad.put(loadId, group);
                            touched.add(loadId);
                            deployments.add(decision.event().getDeploymentId());
                        }
                        group.add(decision);
                        decidedThrough.merge(decision.event().getDeploymentId(), decision.event().getSourceOffset(), Math::max);
                        decisionRecords++;
                    } else if (item instanceof Decoded.Summary summary) {
                        touched.add(summary.event().getLoadId().toString());
                        deployments.add(summary.event().getDeploymentId());
                        summaries.putIfAbsent(summary.event().getLoadId().toString(), summary);
                        summaryRows++;
                    }
                }
                // A load's decisions that match, tensor by tensor, the stored plan they name write nothing; a load whose every
                // decision is here makes its plan at once; the rest wait in the decisions table for the load's other
                // decisions, and so do all later decisions of a load that has some waiting there.
                Map<String, String> named = new HashMap<>();
                decisionsByLoad.forEach((loadId, decisions) -> {
                    String digest = planOf(decisions);
                    if (digest != null) {
                        named.put(loadId, digest);
                    }
                });
                Set<String> stored = StoredPlans.stored(c, new HashSet<>(named.values()));
                Set<String> waiting = StoredPlans.staged(c, decisionsByLoad.keySet());
                Map<String, StoredPlans.NewPlan> newPlans = new LinkedHashMap<>();
                List<AllocationDecided> staged = new ArrayList<>();
                Set<String> stagedLoads = new LinkedHashSet<>();
                for (Map.Entry<String, List<Decoded.Decision>> load : decisionsByLoad.entrySet()) {
                    String digest = named.get(load.getKey());
                    boolean known = digest != null && (stored.contains(digest) || newPlans.containsKey(digest));
                    if (known && !waiting.contains(load.getKey()) && matches(c, digest, load.getValue(), newPlans)) {
                        continue;
                    }
                    List<AllocationDecided> whole = digest == null || known ? null : whole(load.getValue());
                    if (whole != null && PlanDigest.of(whole).equals(digest)) {
                        newPlans.put(digest, new StoredPlans.NewPlan(digest, whole));
                        continue;
                    }
                    load.getValue().forEach(decision -> staged.add(decision.event()));
                    stagedLoads.add(load.getKey());
                }
                if (!staged.isEmpty()) {
                    try (PreparedStatement d = c.prepareStatement(insertDecision)) {
                        for (AllocationDecided decision : staged) {
                            bind(d, StoredDecision.values(decision));
                            d.addBatch();
                        }
                        d.executeBatch();
                    }
                }
                int planRows = plans.write(c, newPlans.values());
                newPlans.values().forEach(plan -> detector.plans().put(plan.digest(), plan.placements()));
                recordRejects(c, batch, now);
                storeOffsets(c, batch);
                phases.end("rows");
                lockDeployments(c, deployments);
                recordDecidedThrough(c, decidedThrough);
                phases.end("lock");
                LoadCompletion.Result completed = completion.complete(c, touched, deployments, summaries, now);
                List<StoredLoad.Completion> completions = completed.completions();
                dropStragglers(c, stagedLoads, completions);
                phases.end("complete");
                List<ChainHead> heads = HashChain.append(c, completions.stream().map(done -> done.load().loadId()).toList());
                phases.end("chain");
                List<Detection> detections = new ArrayList<>();
                for (StoredLoad.Completion done : completions) {
                    if (done.previous() != null) {
                        detections.add(detector.compare(c, done.previous(), done.load(), done.placements()));
                    }
                }
                detector.storeFindings(c, detections);
                List<AlertOutbox.StoredAlert> alerts = outbox.record(c, detections, now);
                releaseHeads(c, completions.stream().map(StoredLoad.Completion::load).toList());
                phases.end("detect");
                if (commit) {
                    beforeCommit.run();
                    c.commit();
                } else {
                    c.rollback();
                }
                phases.end("commit");
                return new BatchOutcome(decisionRecords, summaryRows, staged.size(), planRows, completions.stream().map(done ->
                        new BatchOutcome.CompletedLoad(done.load(), done.heapBytes(), done.offHeapBytes(), done.mappedBytes())).toList(),
                        detections, alerts, heads, phases.nanos());
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            }
        }
    }

    /**
     * Whether each of these decisions carries exactly the values of the plan's tensor at its index: a decision that
     * names a plan but says something else is staged (and so checked by the database and kept from completing the
     * load by the plan), never silently taken as the plan.
     */
    private boolean matches(Connection c, String digest, List<Decoded.Decision> group, Map<String, StoredPlans.NewPlan> newPlans)
            throws SQLException {
        List<Object[]> tensors = null;
        for (Decoded.Decision decision : group) {
            if (digest.equals(decision.checkedPlan())) {
                continue; // checked against this plan as it was decoded
            }
            tensors = tensors == null ? planValues(c, digest, newPlans) : tensors;
            AllocationDecided d = decision.event();
            if (d.getTensorCount() != tensors.size() || !carries(tensors, d)) {
                return false;
            }
        }
        return true;
    }

    /** A recent plan's tensor values, from the plans this batch builds or else the database, remembered by digest. */
    private List<Object[]> planValues(Connection c, String digest, Map<String, StoredPlans.NewPlan> newPlans) throws SQLException {
        List<Object[]> tensors = planValues.get(digest);
        if (tensors == null) {
            StoredPlans.NewPlan fresh = newPlans.get(digest);
            tensors = fresh != null ? fresh.decisions().stream().map(PlanDigest::values).toList() : StoredPlans.tensorValues(c, digest);
            planValues.put(digest, tensors);
        }
        return tensors;
    }

    /** Whether a decision carries exactly the values of the plan's tensor at its index. */
    private static boolean carries(List<Object[]> plan, AllocationDecided d) {
        int index = d.getTensorIndex();
        return index >= 0 && index < plan.size() && PlanDigest.carries(plan.get(index), d);
    }

    /** Whether a decision's values (in {@link PlanDigest#COLUMNS} order) are exactly those of the plan's tensor at its index. */
    private static boolean carries(List<Object[]> plan, int index, Object[] values) {
        return index >= 0 && index < plan.size() && java.util.Arrays.equals(plan.get(index), values);
    }

    /** The plan digest a load's decisions carry, when they all carry the same valid one; else null. */
    private static String planOf(List<Decoded.Decision> group) {
        String digest = StoredPlans.carried(group.get(0).event().getPlanDigest());
        if (digest == null) {
            return null;
        }
        for (Decoded.Decision d : group) {
            if (!digest.equals(d.event().getPlanDigest())) {
                return null;
            }
        }
        return digest;
    }

    /** The load's decisions in tensor order when every one of its tensors is here exactly once; else null. */
    private static List<AllocationDecided> whole(List<Decoded.Decision> group) {
        int count = group.get(0).event().getTensorCount();
        if (group.size() != count) {
            return null;
        }
        AllocationDecided[] ordered = new AllocationDecided[count];
        for (Decoded.Decision decision : group) {
            AllocationDecided d = decision.event();
            int index = d.getTensorIndex();
            if (index < 0 || index >= count || ordered[index] != null || d.getTensorCount() != count) {
                return null;
            }
            ordered[index] = d;
        }
        return java.util.Arrays.asList(ordered);
    }

    /**
     * Takes the lock of each deployment the batch touched, in one order (no deadlock between instances), before its
     * loads are checked for completion. The rows this transaction wrote are already in; a concurrent transaction that
     * wrote the rest of a load waits here until this one commits, and its next statement sees these rows (PostgreSQL
     * and H2 read committed data afresh per statement): so exactly one of the two completes the load, compares it with
     * its predecessor, raises its alerts and chains it, and the deployment's chain grows in one order.
     */
    private void lockDeployments(Connection c, Set<String> deployments) throws SQLException {
        if (deployments.isEmpty()) {
            return;
        }
        try (PreparedStatement insert = c.prepareStatement(insertDeploymentLock)) {
            for (String deployment : deployments) {
                insert.setString(1, deployment);
                insert.addBatch();
            }
            insert.executeBatch();
        }
        // The set is sorted: chunk after chunk, the locks are taken in one order.
        for (List<String> chunk : InList.chunks(deployments)) {
            try (PreparedStatement lock = InList.prepare(c, "SELECT deployment_id FROM deployment_locks WHERE deployment_id IN (%s) "
                    + "ORDER BY deployment_id FOR UPDATE", chunk)) {
                try (ResultSet rs = lock.executeQuery()) {
                    while (rs.next()) {
                        rs.getString(1);
                    }
                }
            }
        }
    }

    /**
     * Keeps, per deployment, the highest {@code model-loads} offset of any decision seen: a deployment's decisions come in
     * the order of its loads, so a load before that offset has had every decision it will get, and one that is still not
     * complete never will be ({@link LoadCompletion}). Runs under the deployment locks, on rows this transaction holds.
     */
    private void recordDecidedThrough(Connection c, Map<String, Long> decidedThrough) throws SQLException {
        if (decidedThrough.isEmpty()) {
            return;
        }
        try (PreparedStatement update = c.prepareStatement(recordDecidedThrough)) {
            for (Map.Entry<String, Long> deployment : new java.util.TreeMap<>(decidedThrough).entrySet()) {
                update.setLong(1, deployment.getValue());
                update.setLong(2, deployment.getValue());
                update.setString(3, deployment.getKey());
                update.addBatch();
            }
            update.executeBatch();
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
        Map<TopicPartition, Long> offsets = new HashMap<>();
        try (Connection c = database.dataSource().getConnection();
             PreparedStatement s = c.prepareStatement("SELECT next_offset FROM ingest_offsets WHERE consumer_group = ? AND topic = ? AND partition_id = ?")) {
            for (TopicPartition partition : partitions) {
                s.setString(1, groupId);
                s.setString(2, partition.topic());
                s.setInt(3, partition.partition());
                try (ResultSet rs = s.executeQuery()) {
                    if (rs.next()) {
                        offsets.put(partition, rs.getLong(1));
                    }
                }
            }
        }
        return offsets;
    }

    /** A row per record set aside, so that its load shows what it is missing and why; idempotent on the record's position. */
    private void recordRejects(Connection c, List<Decoded> batch, Instant now) throws SQLException {
        List<Decoded.Reject> rejects = new ArrayList<>();
        for (Decoded item : batch) {
            if (item instanceof Decoded.Reject reject) {
                rejects.add(reject);
            }
        }
        if (rejects.isEmpty()) {
            return;
        }
        try (PreparedStatement s = c.prepareStatement(upsertDeadLetter)) {
            for (Decoded.Reject reject : rejects) {
                String loadId = reject.loadId() != null && UUID_TEXT.matcher(reject.loadId()).matches() ? reject.loadId() : null;
                bind(s, new Object[]{reject.record().topic(), reject.record().partition(), reject.record().offset(), loadId, reject.reason().name(),
                        Text.printable(reject.detail(), 200), Text.printable(reject.error() == null ? "" : reject.error(), 2_000), Timestamp.from(now)});
                s.addBatch();
            }
            s.executeBatch();
        }
    }

    private void storeOffsets(Connection c, List<Decoded> batch) throws SQLException {
        Map<TopicPartition, Long> next = new HashMap<>();
        // A poll's records come partition by partition: one map update per run of a partition, not per record.
        ConsumerRecord<byte[], byte[]> last = null; // the run's record with the highest offset
        for (Decoded item : batch) {
            ConsumerRecord<byte[], byte[]> record = item.record();
            if (last != null && (last.partition() != record.partition() || !last.topic().equals(record.topic()))) {
                next.merge(new TopicPartition(last.topic(), last.partition()), last.offset() + 1, Math::max);
                last = null;
            }
            if (last == null || record.offset() > last.offset()) {
                last = record;
            }
        }
        if (last != null) {
            next.merge(new TopicPartition(last.topic(), last.partition()), last.offset() + 1, Math::max);
        }
        try (PreparedStatement s = c.prepareStatement(upsertOffset)) {
            for (Map.Entry<TopicPartition, Long> e : next.entrySet()) {
                bind(s, new Object[]{groupId, e.getKey().topic(), e.getKey().partition(), e.getValue()});
                s.addBatch();
            }
            s.executeBatch();
        }
    }

    /**
     * Decisions this batch staged for loads that are complete already (another instance completed the load by its plan
     * while this one could not see the plan yet): each that carries exactly its plan's tensor goes; one that contradicts
     * the plan stays in {@code decisions}, visible and logged, never silently dropped. Loads chained before plans keep
     * their rows (their chain entries cover them).
     */
    private void dropStragglers(Connection c, Set<String> stagedLoads, List<StoredLoad.Completion> completions) throws SQLException {
        Set<String> stragglers = new LinkedHashSet<>(stagedLoads);
        completions.forEach(done -> stragglers.remove(done.load().loadId()));
        for (List<String> chunk : InList.chunks(stragglers)) {
            dropStragglers(c, chunk);
        }
    }

    private void dropStragglers(Connection c, List<String> loadIds) throws SQLException {
        List<String[]> complete = new ArrayList<>();
        try (PreparedStatement s = InList.prepare(c, "SELECT l.load_id, l.plan_digest FROM loads l WHERE l.load_id IN (%s) AND l.complete = TRUE "
                + "AND l.plan_digest IS NOT NULL AND NOT EXISTS (SELECT 1 FROM chain_entries e WHERE e.deployment_id = l.deployment_id "
                + "AND e.load_id = l.load_id AND e.encoding = 1)",
                loadIds); ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
                complete.add(new String[]{rs.getString(1), rs.getString(2)});
            }
        }
        for (String[] load : complete) {
            List<Object[]> plan = planValues(c, load[1], Map.of());
            List<String> matching = new ArrayList<>();
            try (PreparedStatement s = c.prepareStatement("SELECT decision_id, " + String.join(", ", PlanDigest.COLUMNS)
                    + " FROM decisions WHERE load_id = ?")) {
                s.setString(1, load[0]);
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        Object[] values = PlanValues.read(rs, 2);
                        if (carries(plan, (Integer) values[0], values)) {
                            matching.add(rs.getString(1));
                        } else {
                            LOG.warn("decision {} of load {} contradicts the plan the load completed with ({}): kept in the decisions table",
                                    rs.getString(1), load[0], load[1]);
                        }
                    }
                }
            }
            for (List<String> chunk : InList.chunks(matching)) {
                try (PreparedStatement delete = InList.prepare(c, "DELETE FROM decisions WHERE decision_id IN (%s)", chunk)) {
                    delete.executeUpdate();
                }
            }
        }
    }

    /** The kinds of finding that count as a regression where the fleet is shown (SQL literals). */
    public static final String REGRESSION_KINDS = "'LOST_MAPPING', 'OFFHEAP_GROWTH', 'HEAP_GROWTH'";

    /** The columns of a release head: each as the load has it, then the regressions of the load's pair of plans. */
    public static final String RELEASE_HEAD_COLUMNS = "deployment_id, model_id, release_name, load_id, occurred_at, platform_name, "
            + "profile_name, heap_bytes, offheap_bytes, mapped_bytes, plan_digest, previous_plan_digest, summary_partition, summary_offset, "
            + "regressions";

    /**
     * {@link #RELEASE_HEAD_COLUMNS} as a query over {@code loads l} selects them (named as the columns): the load's own
     * values, and how many regressions its comparison found, counted once here rather than by every fleet view.
     */
    public static final String RELEASE_HEAD_VALUES = "l.deployment_id, l.model_id, l.release_name, l.load_id, l.occurred_at, l.platform_name, "
            + "l.profile_name, l.heap_bytes, l.offheap_bytes, l.mapped_bytes, l.plan_digest, l.previous_plan_digest, l.summary_partition, "
            + "l.summary_offset, (SELECT COUNT(*) FROM plan_findings f WHERE f.from_plan = l.previous_plan_digest AND f.to_plan = l.plan_digest "
            + "AND f.kind IN (" + REGRESSION_KINDS + ")) AS regressions";

    /**
     * Standard MERGE (PostgreSQL 15, H2): a release's head moves to a load later in the log (a head kept from before V13
     * has no position and is older than any).
     */
    private static final String MERGE_RELEASE_HEAD = "MERGE INTO release_heads AS t USING (SELECT " + RELEASE_HEAD_VALUES
            + " FROM loads l WHERE l.load_id IN (%s) AND l.complete = TRUE) AS s ON t.deployment_id = s.deployment_id AND t.model_id = s.model_id AND "
            + "t.release_name = s.release_name WHEN MATCHED AND (t.summary_offset IS NULL OR (s.summary_partition, s.summary_offset) >= "
            + "(t.summary_partition, t.summary_offset)) THEN UPDATE SET load_id = s.load_id, occurred_at = s.occurred_at, platform_name = "
            + "s.platform_name, profile_name = s.profile_name, heap_bytes = s.heap_bytes, offheap_bytes = s.offheap_bytes, mapped_bytes = "
            + "s.mapped_bytes, plan_digest = s.plan_digest, previous_plan_digest = s.previous_plan_digest, summary_partition = "
            + "s.summary_partition, summary_offset = s.summary_offset, regressions = s.regressions WHEN NOT MATCHED THEN INSERT ("
            + RELEASE_HEAD_COLUMNS + ") VALUES (" + RELEASE_HEAD_COLUMNS.replaceAll("(\\w+)", "s.$1") + ")";

    /**
     * Each of these just-completed loads becomes its release's head: loads complete in log order, so it is the latest of
     * its deployment, model and release; of several in the batch, only the last in the log is merged.
     */
    private static void releaseHeads(Connection c, Collection<LoadRef> loads) throws SQLException {
        Map<List<String>, LoadRef> latest = new LinkedHashMap<>();
        loads.forEach(load -> latest.merge(List.of(load.deploymentId(), load.modelId(), load.release()), load,
                (a, b) -> LoadRef.IN_LOG_ORDER.compare(a, b) >= 0 ? a : b));
        if (latest.isEmpty()) {
            return;
        }
        // One statement per chunk: each source row is a different head (one load per deployment, model and release).
        for (List<String> chunk : InList.chunks(latest.values().stream().map(LoadRef::loadId).toList())) {
            try (PreparedStatement merge = InList.prepare(c, MERGE_RELEASE_HEAD, chunk)) {
                merge.executeUpdate();
            }
        }
    }

    /** Where a batch's time went, phase by phase (pa_store_batch_phase_seconds): what a store that falls behind spends it on. */
    private static final class Phases {
        private final Map<String, Long> nanos = new java.util.LinkedHashMap<>();
        private long since = System.nanoTime();

        void end(String phase) {
            long now = System.nanoTime();
            nanos.put(phase, now - since);
            since = now;
        }

        Map<String, Long> nanos() {
            return nanos;
        }
    }

    private static void bind(PreparedStatement s, Object[] values) throws SQLException {
        for (int i = 0; i < values.length; i++) {
            s.setObject(i + 1, values[i]);
        }
    }
}
