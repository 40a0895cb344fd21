package dev.placementaudit.store.replay;

import dev.placementaudit.service.cli.CommandFailure;
import dev.placementaudit.service.cli.KafkaReachability;
import dev.placementaudit.store.alerts.AlertOutbox;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.ingest.Decoded;
import dev.placementaudit.store.ingest.ProjectionWriter;
import dev.placementaudit.store.ingest.SummaryPacing;
import dev.placementaudit.store.plans.StoredPlans;
import dev.placementaudit.store.regression.RegressionDetector;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Rebuilds the projection from the decision log into a schema of its own ({@code <live>_rebuild}), proves it equal
 * to the live projection, then swaps it in.
 *
 * <ul>
 *   <li>It reads exactly up to the offsets the live projection has stored, so both describe the same prefix of the
 *       log; if the live store moves on meanwhile, nothing is swapped (stop the store, or rerun).</li>
 *   <li>The rebuild schema keeps its own offsets with its rows, the way the live one does: an interrupted rebuild
 *       resumes where it stopped when rerun.</li>
 *   <li>Growth budgets and incident acknowledgements are configuration, not log: they are copied first, so suppression
 *       replays the same.</li>
 *   <li>The swap replaces the live rows in one transaction and keeps each alert's publication time, so nothing
 *       is published again.</li>
 * </ul>
 */
public final class ProjectionRebuild {
    private static final String REBUILD_GROUP = "projection-rebuild";
    /** The tables a swap replaces, besides the one holding plans' tensors ({@link StoredPlans#tensorTable}). */
    private static final List<String> SWAPPED = List.of("decisions", "plans", "plan_findings", "load_rows", "load_ids", "load_sites",
            "load_builds", "alert_texts", "alerts", "incidents", "incident_deployments", "load_observations", "load_divergences", "runtime_findings",
            "chain_entries_legacy");

    private final StoreConfig config;
    private final PrintWriter out;

    public ProjectionRebuild(StoreConfig config, PrintWriter out) {
        this.config = config;
        this.out = out;
    }

    public record Result(boolean equal, boolean swapped, long records, Map<String, String> live, Map<String, String> rebuilt) {
    }

    /**
     * @param maxRecords stop after this many records (a staged rebuild); the next run resumes
     * @param swap       replace the live projection once proven equal
     * @param force      swap even when different (after a deliberate change to how the projection is derived)
     */
    public Result run(long maxRecords, boolean swap, boolean force) throws SQLException {
        KafkaReachability.check(config.kafka(), config.connectTimeout(), List.of(config.decisionsTopic(), config.resolvedTopic()));
        try (AuditDatabase live = AuditDatabase.openExisting(config.jdbcUrl(), config.jdbcUser(), config.jdbcPassword(), config.jdbcSchema(), 2,
                config.connectTimeout())) {
            String liveSchema = currentSchema(live);
            String rebuildSchema = liveSchema + "_rebuild";
            Map<TopicPartition, Long> target = liveOffsets(live);
            if (target.isEmpty()) {
                throw new CommandFailure("the live projection in schema " + liveSchema + " has stored no offsets "
                        + "for group " + config.groupId() + ": there is nothing to rebuild up to. Give the live store's store.group.id "
                        + "(it ingests as that group), or let it ingest first");
            }
            try (AuditDatabase rebuild = AuditDatabase.open(config.jdbcUrl(), config.jdbcUser(), config.jdbcPassword(), rebuildSchema, 2,
                    config.connectTimeout())) {
                copyBudgets(rebuild, liveSchema, rebuildSchema);
                ProjectionWriter writer = new ProjectionWriter(rebuild, REBUILD_GROUP, config.decisionsTopic(), config.resolvedTopic(),
                        config.observationsTopic(), config.unplannedOffHeap(),
                        new RegressionDetector(rebuild.dialect(), config.offHeapGrowth(), config.heapGrowth()),
                        new AlertOutbox(rebuild.dialect(), config.offHeapGrowth(), config.heapGrowth()), Clock.systemUTC());
                long records = replay(writer, target, maxRecords);
                if (records >= maxRecords && !caughtUp(writer, target)) {
                    out.printf(Locale.ROOT, "rebuild stopped after %d records as asked; rerun to resume%n", records);
                    return new Result(false, false, records, Map.of(), Map.of());
                }
                if (!liveOffsets(live).equals(target)) {
                    out.println("the live projection moved on during the rebuild (is the store running?): not swapping; stop it and rerun");
                    return new Result(false, false, records, Map.of(), Map.of());
                }
                Map<String, String> liveDigest;
                Map<String, String> rebuiltDigest;
                try (Connection c = live.dataSource().getConnection()) {
                    liveDigest = ProjectionDigest.of(c, liveSchema);
                    rebuiltDigest = ProjectionDigest.of(c, rebuildSchema);
                }
                boolean equal = liveDigest.equals(rebuiltDigest);
                out.print(comparison(liveDigest, rebuiltDigest));
                out.println(equal ? "rebuilt projection equals the live one" : "rebuilt projection DIFFERS from the live one");
                boolean swapped = false;
                if (swap && (equal || force)) {
                    swapIn(live, liveSchema, rebuildSchema);
                    swapped = true;
                    out.println("swapped: the live projection is now the rebuilt one");
                }
                if (swapped || equal) {
                    try (Connection c = live.dataSource().getConnection(); Statement s = c.createStatement()) {
                        s.execute("DROP SCHEMA " + rebuildSchema + " CASCADE");
                    }
                }
                return new Result(equal, swapped, records, liveDigest, rebuiltDigest);
            }
        }
    }

    private long replay(ProjectionWriter writer, Map<TopicPartition, Long> target, long maxRecords) throws SQLException {
        Map<String, Object> kafka = new HashMap<>(config.kafka());
        kafka.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        kafka.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        kafka.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(config.maxPollRecords()));
        kafka.remove(ConsumerConfig.GROUP_ID_CONFIG);
        kafka.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) Math.min(Integer.MAX_VALUE, config.connectTimeout().toMillis()));
        long total = 0;
        Map<TopicPartition, Long> start = writer.storedOffsets(target.keySet());
        for (Map.Entry<TopicPartition, Long> t : target.entrySet()) {
            total += t.getValue() - start.getOrDefault(t.getKey(), 0L);
        }
        out.printf(Locale.ROOT, "rebuilding %d records of %s and %s up to the live offsets%s%n", total, config.decisionsTopic(),
                config.resolvedTopic(), start.isEmpty() ? "" : " (resuming)");
        long done = 0;
        long started = System.nanoTime();
        int lastDecile = -1;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(kafka, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> remaining = new ArrayList<>();
            for (Map.Entry<TopicPartition, Long> t : target.entrySet()) {
                if (start.getOrDefault(t.getKey(), 0L) < t.getValue()) {
                    remaining.add(t.getKey());
                }
            }
            consumer.assign(remaining);
            for (TopicPartition partition : remaining) {
                consumer.seek(partition, start.getOrDefault(partition, 0L));
            }
            SummaryPacing pacing = new SummaryPacing();
            long lastAdvance = System.nanoTime();
            long lastPositions = -1;
            while (!consumer.assignment().isEmpty() && done < maxRecords) {
                List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    TopicPartition partition = new TopicPartition(record.topic(), record.partition());
                    if (record.offset() < target.get(partition) && done + batch.size() < maxRecords) {
                        batch.add(record);
                    }
                }
                if (batch.isEmpty()) {
                    pacing.pace(consumer, List.of());
                } else {
                    // What the live store bound to the dead letters (a conflicting load id, another deployment's observation), so does the rebuild.
                    List<Decoded> decoded = writer.bind(writer.decode(batch));
                    // A rebuild reads a backlog: the summaries would run far ahead of their decisions (SummaryPacing).
                    pacing.pace(consumer, decoded);
                    try {
                        writer.write(decoded);
                    } catch (SQLException e) {
                        if (!ProjectionWriter.isContentError(e)) {
                            throw e;
                        }
                        // What the live store set aside, the rebuild sets aside too (it is on the dead-letter topic already).
                        writer.write(writer.isolateUnstorable(decoded, e));
                    }
                    done += batch.size();
                }
                List<TopicPartition> finished = new ArrayList<>();
                long positions = 0;
                for (TopicPartition partition : consumer.assignment()) {
                    long position = consumer.position(partition);
                    positions += position;
                    if (position >= target.get(partition)) {
                        finished.add(partition);
                    }
                }
                if (positions != lastPositions || !batch.isEmpty()) {
                    lastPositions = positions;
                    lastAdvance = System.nanoTime();
                } else if (System.nanoTime() - lastAdvance > config.connectTimeout().toNanos()) {
                    // The broker went away mid-replay: stop with what is left, the next run resumes from the stored offsets.
                    throw new CommandFailure("rebuild stalled: Kafka at " + config.kafka().get("bootstrap.servers") + " returned nothing for "
                            + config.connectTimeout().toSeconds() + " s with " + (total - done) + " of " + total
                            + " records left; rerun to resume where it stopped");
                }
                if (!finished.isEmpty()) {
                    List<TopicPartition> still = new ArrayList<>(consumer.assignment());
                    still.removeAll(finished);
                    consumer.assign(still);
                }
                int decile = total == 0 ? 10 : (int) (done * 10 / total);
                if (decile != lastDecile) {
                    lastDecile = decile;
                    out.printf(Locale.ROOT, "%3d%%  %d/%d records  %.0f records/s%n", decile * 10, done, total,
                            done / Math.max(1e-9, (System.nanoTime() - started) / 1e9));
                    out.flush();
                }
            }
        }
        out.printf(Locale.ROOT, "replayed %d records in %.1f s%n", done, (System.nanoTime() - started) / 1e9);
        return done;
    }

    private static boolean caughtUp(ProjectionWriter writer, Map<TopicPartition, Long> target) throws SQLException {
        return writer.storedOffsets(target.keySet()).equals(target);
    }

    private Map<TopicPartition, Long> liveOffsets(AuditDatabase live) throws SQLException {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        try (Connection c = live.dataSource().getConnection();
             PreparedStatement s = c.prepareStatement("SELECT topic, partition_id, next_offset FROM ingest_offsets WHERE consumer_group = ?")) {
            s.setString(1, config.groupId());
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    offsets.put(new TopicPartition(rs.getString(1), rs.getInt(2)), rs.getLong(3));
                }
            }
        }
        // Partitions the live store never wrote (empty ones) are at 0 in both.
        return offsets;
    }

    private static void copyBudgets(AuditDatabase rebuild, String from, String to) throws SQLException {
        try (Connection c = rebuild.transaction(); Statement s = c.createStatement()) {
            s.execute("DELETE FROM " + to + ".growth_budgets");
            s.execute("INSERT INTO " + to + ".growth_budgets SELECT * FROM " + from + ".growth_budgets");
            s.execute("DELETE FROM " + to + ".incident_acks");
            s.execute("INSERT INTO " + to + ".incident_acks SELECT * FROM " + from + ".incident_acks");
            c.commit();
        }
    }

    /** Replaces the live rows with the rebuilt ones in one transaction; the live store's offsets stay as they were. */
    private static void swapIn(AuditDatabase live, String liveSchema, String rebuildSchema) throws SQLException {
        try (Connection c = live.transaction(); Statement s = c.createStatement()) {
            s.execute("UPDATE " + rebuildSchema + ".alerts SET published_at = (SELECT o.published_at FROM " + liveSchema
                    + ".alerts o WHERE o.alert_id = " + rebuildSchema + ".alerts.alert_id)");
            // What placement-alerts last carried of each incident stays known: a swap republishes only what differs.
            for (String column : List.of("published_version", "published_state", "published_at")) {
                s.execute("UPDATE " + rebuildSchema + ".incidents SET " + column + " = (SELECT o." + column + " FROM " + liveSchema
                        + ".incidents o WHERE o.incident_id = " + rebuildSchema + ".incidents.incident_id)");
            }
            for (String table : Stream.concat(Stream.of(StoredPlans.tensorTable(live.dialect())), SWAPPED.stream()).toList()) {
                s.execute("DELETE FROM " + liveSchema + "." + table);
                s.execute("INSERT INTO " + liveSchema + "." + table + " SELECT * FROM " + rebuildSchema + "." + table);
            }
            // The load rows brought their chain entries (docs/adr/0015): each chain goes on from the rebuilt head.
            s.execute("INSERT INTO " + liveSchema + ".deployment_locks (deployment_id) SELECT r.deployment_id FROM " + rebuildSchema
                    + ".deployment_locks r WHERE NOT EXISTS (SELECT 1 FROM " + liveSchema + ".deployment_locks k WHERE k.deployment_id = r.deployment_id)");
            for (String column : List.of("chain_seq", "chain_load_id", "chain_hash")) {
                s.execute("UPDATE " + liveSchema + ".deployment_locks SET " + column + " = (SELECT r." + column + " FROM " + rebuildSchema
                        + ".deployment_locks r WHERE r.deployment_id = " + liveSchema + ".deployment_locks.deployment_id)");
            }
            c.commit();
        }
    }

    private static String currentSchema(AuditDatabase db) throws SQLException {
        try (Connection c = db.dataSource().getConnection()) {
            return c.getSchema();
        }
    }

    /**
     * Each table's digest, live beside rebuilt, in columns as wide as their longest value (table names run to 20
     * characters, digests to a row count and a hash), then whether they are equal.
     */
    static String comparison(Map<String, String> live, Map<String, String> rebuilt) {
        List<String> tables = ProjectionDigest.tables();
        int name = "table".length();
        int digest = "live".length();
        for (String t : tables) {
            name = Math.max(name, t.length());
            digest = Math.max(digest, Math.max(String.valueOf(live.get(t)).length(), String.valueOf(rebuilt.get(t)).length()));
        }
        String row = "  %-" + name + "s  %-" + digest + "s  %-" + digest + "s  %s%n";
        StringBuilder out = new StringBuilder(String.format(Locale.ROOT, row, "table", "live", "rebuilt", ""));
        for (String t : tables) {
            out.append(String.format(Locale.ROOT, row, t, live.get(t), rebuilt.get(t),
                    java.util.Objects.equals(live.get(t), rebuilt.get(t)) ? "equal" : "DIFFERENT"));
        }
        return out.toString();
    }
}
