package dev.placementaudit.store.alerts;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.service.Secrets;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.plans.PlanCache;
import dev.placementaudit.store.regression.Detection;
import dev.placementaudit.store.regression.Finding;
import dev.placementaudit.store.regression.FindingKind;
import dev.placementaudit.store.regression.GrowthRule;
import dev.placementaudit.store.regression.ReleaseDiff;
import dev.placementaudit.store.regression.RootCauses;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Turns a detection into alerts and writes them to the {@code alerts} table in the ingesting transaction, so an
 * alert exists if and only if its findings do. A growth budget or acknowledgement for the deployment's release
 * suppresses the alert (it is still recorded, with who suppressed it, but never published).
 */
public final class AlertOutbox {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int TOP_TENSORS = 5;
    private static final List<String> COLUMNS = List.of("alert_id", "kind", "deployment_id", "model_id", "from_release", "to_release",
            "from_load_id", "to_load_id", "before_bytes", "after_bytes", "delta_bytes", "rule_text", "threshold_percent", "threshold_bytes",
            "text_id", "detected_at", "suppressed_by");
    private static final List<String> TYPES = List.of("VARCHAR(36)", "VARCHAR(30)", "VARCHAR(200)", "VARCHAR(200)", "VARCHAR(200)",
            "VARCHAR(200)", "VARCHAR(36)", "VARCHAR(36)", "BIGINT", "BIGINT", "BIGINT", "VARCHAR(500)", "DOUBLE PRECISION", "BIGINT",
            "VARCHAR(32)", "TIMESTAMP WITH TIME ZONE", "VARCHAR(500)");
    /**
     * An alert's text, its top tensors and causes, kept once per distinct text (V16): how a reader selects it, taking the
     * alert's own columns first (alerts written before V16 keep theirs), with {@link #withText} joined. {@code a} is the
     * alert, {@code t} its text.
     */
    public static final String TEXT_TOP_TENSORS = "COALESCE(a.top_tensors, t.top_tensors)";
    public static final String TEXT_CAUSES = "COALESCE(a.causes, t.causes)";

    private final GrowthRule offHeap;
    private final GrowthRule heap;
    private final String insert;
    private final String insertText;
    /** The top tensors and causes of an alert, as JSON, by pair of plans and domain. */
    private final Map<String, Text> rendered = PlanCache.lru(256);

    public AlertOutbox(Dialect dialect, GrowthRule offHeap, GrowthRule heap) {
        this.offHeap = offHeap;
        this.heap = heap;
        this.insert = dialect.insertIgnoringDuplicates("alerts", COLUMNS, TYPES, "alert_id");
        this.insertText = dialect.insertIgnoringDuplicates("alert_texts", List.of("text_id", "top_tensors", "causes"),
                List.of("VARCHAR(32)", "VARCHAR(65535)", "VARCHAR(65535)"), "text_id");
    }

    /**
     * Writes the alerts of these detections in one batch, each checked against the growth budgets of its deployment
     * and release (read in one query).
     *
     * @return the alerts written (suppressed ones included), in the detections' order
     */
    public List<StoredAlert> record(Connection c, List<Detection> detections, Instant now) throws SQLException {
        List<Object[]> rows = new ArrayList<>();
        Map<String, Text> texts = new LinkedHashMap<>();
        List<StoredAlert> alerts = new ArrayList<>();
        Budgets budgets = null;
        for (Detection detection : detections) {
            if (!detection.has(FindingKind.OFFHEAP_GROWTH) && !detection.has(FindingKind.HEAP_GROWTH) && !detection.has(FindingKind.LOST_MAPPING)) {
                continue;
            }
            if (budgets == null) {
                budgets = Budgets.read(c, detections);
            }
            for (Finding growth : detection.of(FindingKind.OFFHEAP_GROWTH)) {
                alert(rows, texts, alerts, budgets, detection, "OFFHEAP_GROWTH", growth.beforeBytes(), growth.afterBytes(), offHeap.describe(), offHeap,
                        ReleaseDiff.OFFHEAP, now);
            }
            for (Finding growth : detection.of(FindingKind.HEAP_GROWTH)) {
                alert(rows, texts, alerts, budgets, detection, "HEAP_GROWTH", growth.beforeBytes(), growth.afterBytes(), heap.describe(), heap,
                        ReleaseDiff.HEAP, now);
            }
            List<Finding> lost = detection.of(FindingKind.LOST_MAPPING);
            if (!lost.isEmpty()) {
                long before = lost.stream().mapToLong(Finding::beforeBytes).sum();
                long after = lost.stream().mapToLong(Finding::afterBytes).sum();
                alert(rows, texts, alerts, budgets, detection, "LOST_MAPPING", 0, after, lost.size() + " tensor(s) no longer mapped; "
                        + ByteSizes.format(after) + " now charged to memory (were " + ByteSizes.format(before) + " of file pages)", null,
                        ReleaseDiff.MMAP, now);
            }
        }
        if (!rows.isEmpty()) {
            // The batch's texts first, each once; one already stored (by this instance or another) is left as it is.
            try (PreparedStatement s = c.prepareStatement(insertText)) {
                for (Text text : texts.values()) {
                    s.setString(1, text.id());
                    s.setString(2, text.topTensors());
                    s.setString(3, text.causes());
                    s.addBatch();
                }
                s.executeBatch();
            }
            try (PreparedStatement s = c.prepareStatement(insert)) {
                for (Object[] values : rows) {
                    for (int i = 0; i < values.length; i++) {
                        s.setObject(i + 1, values[i]);
                    }
                    s.addBatch();
                }
                s.executeBatch();
            }
        }
        return alerts;
    }

    /**
     * @param domain the memory domain whose change the alert is about: its top tensors and causes are the ones that moved
     *               bytes into or out of it, whatever else changed (a weight dequantized where it already was off-heap
     *               changes only its format, and is still the reason the off-heap total grew)
     */
    private void alert(List<Object[]> rows, Map<String, Text> texts, List<StoredAlert> alerts, Budgets budgets, Detection d, String kind, long before, long after,
                       String rule, GrowthRule threshold, String domain, Instant now) {
        String id = UUID.nameUUIDFromBytes((kind + "/" + d.load().deploymentId() + "/" + d.load().modelId() + "/" + d.load().loadId())
                .getBytes(StandardCharsets.UTF_8)).toString();
        String suppressedBy = budgets.covering(d.load().deploymentId(), d.load().release(), kind, after - before);
        // What an alert says of its causes depends on the two plans alone: rendered once per pair of plans and domain.
        String key = d.previous().planDigest() == null || d.load().planDigest() == null ? null
                : d.previous().planDigest() + ">" + d.load().planDigest() + "/" + domain;
        Text text = key == null ? null : rendered.get(key);
        if (text == null) {
            List<Map<String, Object>> top = RootCauses.topTensors(d.causes(), domain, TOP_TENSORS).stream().map(AlertOutbox::tensorJson).toList();
            List<String> causes = RootCauses.touching(d.causes(), domain).stream().map(RootCauses.CauseGroup::cause).toList();
            try {
                text = Text.of(JSON.writeValueAsString(top), JSON.writeValueAsString(causes));
            } catch (JsonProcessingException e) {
                throw new IllegalStateException(e);
            }
            if (key != null) {
                rendered.put(key, text);
            }
        }
        texts.putIfAbsent(text.id(), text);
        rows.add(new Object[]{id, kind, d.load().deploymentId(), d.load().modelId(), d.previous().release(), d.load().release(),
                d.previous().loadId(), d.load().loadId(), before, after, after - before, rule,
                threshold == null ? null : threshold.percent(), threshold == null ? null : threshold.bytes(), text.id(), Timestamp.from(now), suppressedBy});
        alerts.add(new StoredAlert(id, kind, d.load().deploymentId(), d.load().modelId(), d.previous().release(), d.load().release(), after - before,
                suppressedBy));
    }

    /**
     * How {@code alerts a} joins its text; {@code schema} qualifies the texts' table (with its dot), or is empty for the
     * connection's own schema.
     */
    public static String withText(String schema) {
        return "LEFT JOIN " + schema + "alert_texts t ON t.text_id = a.text_id";
    }

    /** An alert's text as JSON, and its id: the first 32 hex characters (128 bits) of the SHA-256 of its two parts, NUL between them. */
    private record Text(String topTensors, String causes, String id) {
        static Text of(String topTensors, String causes) {
            return new Text(topTensors, causes, Secrets.sha256Hex(topTensors + '\u0000' + causes).substring(0, 32));
        }
    }

    /** The growth budgets and acknowledgements of the deployments some detections are about. */
    private record Budgets(Map<List<String>, Budget> byKey) {
        static Budgets read(Connection c, List<Detection> detections) throws SQLException {
            Map<List<String>, Budget> byKey = new HashMap<>();
            Set<String> deployments = new LinkedHashSet<>();
            detections.forEach(d -> deployments.add(d.load().deploymentId()));
            for (List<String> chunk : InList.chunks(deployments)) {
                try (PreparedStatement s = InList.prepare(c, "SELECT deployment_id, release_name, kind, max_delta_bytes, note FROM growth_budgets "
                        + "WHERE deployment_id IN (%s)", chunk); ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        long max = rs.getLong(4);
                        Long limit = rs.wasNull() ? null : max;
                        byKey.put(List.of(rs.getString(1), rs.getString(2), rs.getString(3)), new Budget(limit, rs.getString(5)));
                    }
                }
            }
            return new Budgets(byKey);
        }

        /** The budget or acknowledgement that covers this growth, described; null when none does. */
        String covering(String deployment, String release, String kind, long delta) {
            Budget budget = byKey.get(List.of(deployment, release, kind));
            if (budget == null) {
                return null;
            }
            if (budget.maxDeltaBytes() == null) {
                return "acknowledged: " + budget.note();
            }
            return delta <= budget.maxDeltaBytes() ? "within budget of " + ByteSizes.format(budget.maxDeltaBytes()) + ": " + budget.note() : null;
        }
    }

    /** A budget row: no limit means an acknowledgement. */
    private record Budget(Long maxDeltaBytes, String note) {
    }

    private static Map<String, Object> tensorJson(RootCauses.TensorChange t) {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("name", t.name());
        json.put("beforeDomain", t.beforeDomain());
        json.put("afterDomain", t.afterDomain());
        json.put("beforeBytes", t.beforeBytes());
        json.put("afterBytes", t.afterBytes());
        json.put("beforeReason", t.beforeReason());
        json.put("afterReason", t.afterReason());
        return json;
    }

    /** The cause lines an alert row holds ({@code causes}, a JSON array of strings; NULL in rows older than V5): none then. */
    public static List<String> readCauses(String json) throws IOException {
        return json == null ? List.of() : JSON.readValue(json, new TypeReference<List<String>>() { });
    }

    /** What was recorded, for metrics and logs. */
    public record StoredAlert(String alertId, String kind, String deploymentId, String modelId, String fromRelease, String release,
                              long deltaBytes, String suppressedBy) {
    }
}
