package dev.placementaudit.store.ingest;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.store.chain.ChainHead;
import dev.placementaudit.store.chain.HashChain;
import dev.placementaudit.store.db.ById;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.plans.StoredPlans;
import dev.placementaudit.store.regression.LoadRef;
import dev.placementaudit.store.regression.RegressionDetector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * Which loads a batch completes, in what order, and with which predecessor: the step that makes the projection a
 * function of the log (docs/adr/0006).
 *
 * <p>A deployment's loads complete in log order, whatever the batching, the number of store instances and the times the
 * events carry. A load whose plan is stored completes as soon as its summary is in, but one whose plan is new waits
 * for its decisions, which may come batches later (the two topics are read independently): without a rule, the load
 * after it in the log would complete first, be chained first and be compared with an older predecessor, and a rebuild
 * that read the decisions sooner would write another chain and other alerts. So a load completes only once every load
 * before it of its deployment has completed or can no longer complete: it has dead-lettered records, or its
 * deployment's decisions have gone past it in {@code model-loads} (their order there is the loads' order, so it has all
 * the decisions it will ever get). Each completing load then finds every load before it final, and is compared with
 * the latest of them; nothing that completed is ever compared again.
 */
final class LoadCompletion {
    private static final Logger LOG = LoggerFactory.getLogger(LoadCompletion.class);
    private static final String CANDIDATE_COLUMNS = LoadRef.COLUMNS + ", tensor_count, complete, heap_bytes, offheap_bytes, mapped_bytes, "
            + "source_offset";

    private final StoredPlans plans;
    private final RegressionDetector detector;
    private final LoadContexts contexts;

    LoadCompletion(StoredPlans plans, RegressionDetector detector, LoadContexts contexts) {
        this.plans = plans;
        this.detector = detector;
        this.contexts = contexts;
    }

    /**
     * Completes, in log order per deployment, every load of the batch's deployments that can complete now and has no
     * load before it that may still, and writes each load's row once: a summary that arrives is inserted as it stands then
     * (complete, with its predecessor, in the common case); a load stored earlier is updated once when it completes.
     * Staged decisions of a load completed from them are deleted: its plan holds them.
     *
     * @param touched     the loads this batch has records of
     * @param deployments the deployments this batch has records of: their waiting loads are looked at again
     * @param summaries   the summaries in this batch, by load id (the first of each)
     * @param locked      the deployments' lock rows as this transaction read them ({@link DeploymentLocks#lock}): how far
     *                    each one's decisions have come, and its hash chain's head
     * @return the completions, in log order within each deployment, each with its predecessor; and the new head of each
     *         deployment's chain that grew
     */
    Completed complete(Connection c, Set<String> touched, Set<String> deployments, Map<String, Decoded.Summary> summaries,
                       DeploymentLocks.Locked locked, Instant now) throws SQLException {
        // The deployment locks are held: no other transaction writes these loads' rows until this one commits.
        Map<String, Candidate> candidates = new LinkedHashMap<>();
        Set<String> stored = new HashSet<>();
        for (List<String> chunk : InList.chunks(touched)) {
            read(c, "SELECT " + CANDIDATE_COLUMNS + " FROM loads WHERE " + ById.in(""), chunk, candidates, stored);
        }
        for (List<String> chunk : InList.chunks(deployments)) {
            read(c, "SELECT " + CANDIDATE_COLUMNS + " FROM loads WHERE deployment_id IN (%s) AND complete = FALSE", chunk, candidates, stored);
        }
        List<Decoded.Summary> fresh = summaries.values().stream().filter(sm -> !stored.contains(sm.event().getLoadId().toString())).toList();
        for (Decoded.Summary summary : fresh) {
            LoadResolved l = summary.event();
            candidates.put(l.getLoadId().toString(), new Candidate(new LoadRef(l.getLoadId().toString(), l.getDeploymentId(), l.getModelId(),
                    l.getRelease(), l.getLoadOccurredAt(), l.getResolverVersion(), StoredPlans.carried(l.getPlanDigest()),
                    new LoadRef.Position(summary.record().partition(), summary.record().offset())), l.getTensorCount(),
                    l.getHeapBytes(), l.getOffHeapBytes(), l.getMappedBytes(), l.getSourceOffset(), summary));
        }
        Needs needs = needs(c, candidates);
        Map<String, Long> decidedThrough = locked.decidedThrough();
        List<LoadRef> done = new ArrayList<>();
        List<String> emptied = new ArrayList<>();
        for (List<Candidate> history : byDeploymentInLogOrder(candidates.values()).values()) {
            for (Candidate candidate : history) {
                LoadRef load = candidate.load();
                long waiting = needs.staged.getOrDefault(load.loadId(), 0L);
                boolean dead = needs.dead.getOrDefault(load.loadId(), 0L) > 0;
                String plan;
                if (waiting == candidate.tensorCount()) {
                    // Every decision staged: they make the plan (one already stored, or a new one), as they say.
                    plan = plans.fromStaged(c, load.loadId(), load.resolverVersion()).digest();
                    if (load.planDigest() != null && !load.planDigest().equals(plan)) {
                        LOG.warn("load {} names plan {} but its decisions make plan {}: stored with the plan its decisions make",
                                load.loadId(), load.planDigest(), plan);
                    }
                    emptied.add(load.loadId());
                } else if (load.planDigest() != null && needs.storedPlans.contains(load.planDigest()) && waiting == 0 && !dead) {
                    // Every decision matched the stored plan the load names (none waits, none was set aside).
                    plan = load.planDigest();
                } else {
                    if (dead || candidate.sourceOffset() == null
                            || decidedThrough.getOrDefault(load.deploymentId(), -1L) > candidate.sourceOffset()) {
                        continue; // it will never complete: it holds nothing up
                    }
                    break; // its decisions are still to come: the loads after it wait for it
                }
                done.add(load.withPlan(plan));
            }
        }
        Map<String, LoadRef> previous = predecessors(c, done);
        Map<String, StoredLoad.Completion> completions = new LinkedHashMap<>();
        for (LoadRef load : done) {
            Candidate candidate = candidates.get(load.loadId());
            completions.put(load.loadId(), new StoredLoad.Completion(load, previous.get(load.loadId()), now, candidate.heapBytes(),
                    candidate.offHeapBytes(), candidate.mappedBytes()));
        }
        Map<String, ChainHead> entries = chain(c, completions.values(), candidates, locked.chainHeads());
        write(c, fresh, completions, candidates, ReleaseHeads.mark(c, done), entries, now);
        for (List<String> chunk : InList.chunks(emptied)) {
            try (PreparedStatement delete = InList.prepare(c, "DELETE FROM decisions WHERE load_id IN (%s)", chunk)) {
                delete.executeUpdate();
            }
        }
        Map<String, ChainHead> heads = new LinkedHashMap<>();
        entries.values().forEach(entry -> heads.put(entry.deploymentId(), entry));
        return new Completed(List.copyOf(completions.values()), List.copyOf(heads.values()));
    }

    /** What a batch completed, and the new head of each hash chain it grew. */
    record Completed(List<StoredLoad.Completion> completions, List<ChainHead> chainHeads) {
    }

    /**
     * Each completing load's entry in its deployment's hash chain, by load id in chain order: hashed over its row as it
     * will be stored, from its summary when it came in this batch, else from its row with the plan it completes with.
     */
    private static Map<String, ChainHead> chain(Connection c, Collection<StoredLoad.Completion> completions, Map<String, Candidate> candidates,
                                                Map<String, ChainHead> chainHeads) throws SQLException {
        List<HashChain.Link> links = new ArrayList<>();
        Map<String, String> storedPlans = new HashMap<>();
        for (StoredLoad.Completion completion : completions) {
            Decoded.Summary summary = candidates.get(completion.load().loadId()).summary();
            if (summary != null) {
                links.add(StoredLoad.link(summary.event(), summary.record().partition(), summary.record().offset(), completion.load().planDigest()));
            } else {
                storedPlans.put(completion.load().loadId(), completion.load().planDigest());
            }
        }
        for (List<String> chunk : InList.chunks(storedPlans.keySet())) {
            try (PreparedStatement s = InList.prepare(c, "SELECT " + String.join(", ", HashChain.LOAD_COLUMNS) + " FROM loads WHERE " + ById.in(""),
                    chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    List<Object> row = HashChain.values(rs, 1, HashChain.LOAD_COLUMNS.size());
                    row.add(storedPlans.get(rs.getString("load_id")));
                    long partition = rs.getLong("summary_partition");
                    boolean noPartition = rs.wasNull();
                    long offset = rs.getLong("summary_offset");
                    boolean noOffset = rs.wasNull();
                    links.add(new HashChain.Link(rs.getString("load_id"), rs.getString("deployment_id"), noPartition ? -1 : partition,
                            noOffset ? -1 : offset, row));
                }
            }
        }
        Map<String, ChainHead> entries = new LinkedHashMap<>();
        Map<String, ChainHead> tails = HashChain.tails(c, chainHeads, links.stream().map(HashChain.Link::deploymentId).distinct().toList());
        HashChain.link(links, tails).forEach(entry -> entries.put(entry.loadId(), entry));
        return entries;
    }

    private static void read(Connection c, String sql, List<String> chunk, Map<String, Candidate> candidates, Set<String> stored)
            throws SQLException {
        try (PreparedStatement select = InList.prepare(c, sql, chunk); ResultSet rs = select.executeQuery()) {
            while (rs.next()) {
                stored.add(rs.getString("load_id"));
                if (!rs.getBoolean("complete") && !candidates.containsKey(rs.getString("load_id"))) {
                    long source = rs.getLong("source_offset");
                    candidates.put(rs.getString("load_id"), new Candidate(RegressionDetector.ref(rs), rs.getInt("tensor_count"),
                            rs.getLong("heap_bytes"), rs.getLong("offheap_bytes"), rs.getLong("mapped_bytes"), rs.wasNull() ? null : source, null));
                }
            }
        }
    }

    /** The candidates by deployment, each deployment's in log order. */
    private static Map<String, List<Candidate>> byDeploymentInLogOrder(Collection<Candidate> candidates) {
        Map<String, List<Candidate>> byDeployment = new TreeMap<>();
        candidates.forEach(candidate -> byDeployment.computeIfAbsent(candidate.load().deploymentId(), d -> new ArrayList<>()).add(candidate));
        byDeployment.values().forEach(history -> history.sort((a, b) -> LoadRef.IN_LOG_ORDER.compare(a.load(), b.load())));
        return byDeployment;
    }

    /** What each candidate has: its staged decisions, its dead letters, whether the plan it names is stored. */
    private record Needs(Map<String, Long> staged, Map<String, Long> dead, Set<String> storedPlans) {
    }

    private static Needs needs(Connection c, Map<String, Candidate> candidates) throws SQLException {
        Map<String, Long> staged = new HashMap<>();
        Map<String, Long> dead = new HashMap<>();
        for (List<String> chunk : InList.chunks(candidates.keySet())) {
            try (PreparedStatement s = InList.prepare(c, "SELECT load_id, resolver_version, COUNT(*) FROM decisions WHERE load_id IN (%s) "
                    + "GROUP BY load_id, resolver_version", chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    if (rs.getString(2).equals(candidates.get(rs.getString(1)).load().resolverVersion())) {
                        staged.put(rs.getString(1), rs.getLong(3));
                    }
                }
            }
            try (PreparedStatement s = InList.prepare(c, "SELECT load_id, COUNT(*) FROM dead_letters WHERE load_id IN (%s) AND detail NOT IN ("
                    + LoadIds.NOT_THE_LOADS + ") GROUP BY load_id",
                    chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    dead.put(rs.getString(1), rs.getLong(2));
                }
            }
        }
        Set<String> named = new LinkedHashSet<>();
        candidates.values().stream().map(candidate -> candidate.load().planDigest()).filter(Objects::nonNull).forEach(named::add);
        return new Needs(staged, dead, StoredPlans.stored(c, named));
    }

    /**
     * Each completing load's predecessor: the latest load of its deployment and model and another release before it in
     * the log, complete before this batch (one query) or completing in it ahead of it. Those completing in the batch come
     * later in the log than any complete before it (loads complete in log order), so the latest of them wins.
     */
    private Map<String, LoadRef> predecessors(Connection c, List<LoadRef> completing) throws SQLException {
        Map<String, LoadRef> previous = detector.previous(c, completing);
        Map<List<String>, List<LoadRef>> byModel = new HashMap<>();
        for (LoadRef load : completing) {
            List<LoadRef> before = byModel.computeIfAbsent(List.of(load.deploymentId(), load.modelId()), k -> new ArrayList<>());
            for (int i = before.size() - 1; i >= 0; i--) {
                if (!before.get(i).release().equals(load.release())) {
                    previous.put(load.loadId(), before.get(i));
                    break;
                }
            }
            before.add(load);
        }
        return previous;
    }

    /**
     * Each row written once: the summaries that arrived, as they stand; the loads stored earlier that complete now; each
     * marked if it is its release's head now, and its deployment's latest of its model ({@code marks}), with its chain entry ({@code entries}) if it completes.
     */
    private void write(Connection c, List<Decoded.Summary> fresh, Map<String, StoredLoad.Completion> completions,
                       Map<String, Candidate> candidates, ReleaseHeads.Marks marks, Map<String, ChainHead> entries, Instant now) throws SQLException {
        if (!fresh.isEmpty()) {
            Map<String, LoadContexts.Keys> keys = contexts.keys(c, fresh.stream().map(Decoded.Summary::event).toList());
            // The id first: it is unique there (V30), so of two instances storing one id at once, one fails here and its
            // batch's retry finds the other's load ({@link LoadIds}).
            try (PreparedStatement insert = c.prepareStatement("INSERT INTO load_ids (load_id, occurred_at) VALUES (?, ?)")) {
                for (Decoded.Summary summary : fresh) {
                    insert.setString(1, summary.event().getLoadId().toString());
                    insert.setTimestamp(2, Timestamp.from(summary.event().getLoadOccurredAt()));
                    insert.addBatch();
                }
                insert.executeBatch();
            }
            try (PreparedStatement insert = c.prepareStatement(StoredLoad.INSERT)) {
                for (Decoded.Summary summary : fresh) {
                    bind(insert, StoredLoad.values(summary.event(), keys.get(summary.event().getLoadId().toString()),
                            summary.record().partition(), summary.record().offset(),
                            completions.get(summary.event().getLoadId().toString()), marks.heads().contains(summary.event().getLoadId().toString()),
                            marks.latest().contains(summary.event().getLoadId().toString()), entries.get(summary.event().getLoadId().toString())));
                    insert.addBatch();
                }
                insert.executeBatch();
            }
        }
        List<StoredLoad.Completion> updates = completions.values().stream()
                .filter(completion -> candidates.get(completion.load().loadId()).summary() == null).toList();
        if (updates.isEmpty()) {
            return;
        }
        try (PreparedStatement update = c.prepareStatement("UPDATE load_rows SET complete = TRUE, completed_at = ?, plan_bytes = ?, "
                + "previous_load_id = ?, previous_release = ?, previous_plan_bytes = ?, is_head = ?, is_latest = ?, chain_seq = ?, chain_hash = ? "
                // The time lets PostgreSQL go to the load's partition rather than probe every month's (docs/adr/0024).
                + "WHERE load_id = ? AND occurred_at = ?")) {
            for (StoredLoad.Completion completion : updates) {
                LoadRef before = completion.previous();
                ChainHead entry = entries.get(completion.load().loadId());
                bind(update, new Object[]{Timestamp.from(now), StoredPlans.bytes(completion.load().planDigest()),
                        before == null ? null : before.loadId(), before == null ? null : before.release(),
                        before == null ? null : StoredPlans.bytes(before.planDigest()), marks.heads().contains(completion.load().loadId()),
                        marks.latest().contains(completion.load().loadId()), entry.seq(), HashChain.bytes(entry.entryHash()),
                        completion.load().loadId(), Timestamp.from(completion.load().occurredAt())});
                update.addBatch();
            }
            update.executeBatch();
        }
    }

    private static void bind(PreparedStatement s, Object[] values) throws SQLException {
        for (int i = 0; i < values.length; i++) {
            s.setObject(i + 1, values[i]);
        }
    }

    /**
     * A load not complete yet, as stored or (with its {@code summary}) as the summary in this batch says, with its totals
     * per domain and its offset in {@code model-loads} (null in rows stored before V13).
     */
    private record Candidate(LoadRef load, int tensorCount, long heapBytes, long offHeapBytes, long mappedBytes, Long sourceOffset,
                             Decoded.Summary summary) {
    }
}
