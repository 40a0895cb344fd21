package dev.placementaudit.store.alerts;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.regression.Detection;
import dev.placementaudit.store.regression.Finding;
import dev.placementaudit.store.regression.FindingKind;
import dev.placementaudit.store.regression.GrowthRule;
import dev.placementaudit.store.regression.ReleaseDiff;
import dev.placementaudit.store.regression.RootCauses;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
            "top_tensors", "detected_at", "suppressed_by", "causes");
    private static final List<String> TYPES = List.of("VARCHAR(36)", "VARCHAR(30)", "VARCHAR(200)", "VARCHAR(200)", "VARCHAR(200)",
            "VARCHAR(200)", "VARCHAR(36)", "VARCHAR(36)", "BIGINT", "BIGINT", "BIGINT", "VARCHAR(500)", "DOUBLE PRECISION", "BIGINT",
            "VARCHAR(65535)", "TIMESTAMP WITH TIME ZONE", "VARCHAR(500)", "VARCHAR(65535)");

    private final GrowthRule offHeap;
    private final GrowthRule heap;
    private final String insert;

    public AlertOutbox(Dialect dialect, GrowthRule offHeap, GrowthRule heap) {
        this.offHeap = offHeap;
        this.heap = heap;
        this.insert = dialect.insertIgnoringDuplicates("alerts", COLUMNS, TYPES, "alert_id");
    }

    /** @return the alerts written (suppressed ones included) */
    public List<StoredAlert> record(Connection c, Detection detection, Instant now) throws SQLException {
        List<StoredAlert> alerts = new ArrayList<>();
        for (Finding growth : detection.of(FindingKind.OFFHEAP_GROWTH)) {
            alerts.add(alert(c, detection, "OFFHEAP_GROWTH", growth.beforeBytes(), growth.afterBytes(), offHeap.describe(), offHeap,
                    ReleaseDiff.OFFHEAP, now));
        }
        for (Finding growth : detection.of(FindingKind.HEAP_GROWTH)) {
            alerts.add(alert(c, detection, "HEAP_GROWTH", growth.beforeBytes(), growth.afterBytes(), heap.describe(), heap, ReleaseDiff.HEAP, now));
        }
        List<Finding> lost = detection.of(FindingKind.LOST_MAPPING);
        if (!lost.isEmpty()) {
            long before = lost.stream().mapToLong(Finding::beforeBytes).sum();
            long after = lost.stream().mapToLong(Finding::afterBytes).sum();
            alerts.add(alert(c, detection, "LOST_MAPPING", 0, after, lost.size() + " tensor(s) no longer mapped; "
                    + ByteSizes.format(after) + " now charged to memory (were " + ByteSizes.format(before) + " of file pages)", null,
                    ReleaseDiff.MMAP, now));
        }
        return alerts;
    }

    /**
     * @param domain the memory domain whose change the alert is about: its top tensors and causes are the ones that moved
     *               bytes into or out of it, whatever else changed (a weight dequantized where it already was off-heap
     *               changes only its format, and is still the reason the off-heap total grew)
     */
    private StoredAlert alert(Connection c, Detection d, String kind, long before, long after, String rule, GrowthRule threshold,
                              String domain, Instant now) throws SQLException {
        String id = UUID.nameUUIDFromBytes((kind + "/" + d.load().deploymentId() + "/" + d.load().modelId() + "/" + d.load().loadId())
                .getBytes(StandardCharsets.UTF_8)).toString();
        String suppressedBy = budget(c, d.load().deploymentId(), d.load().release(), kind, after - before);
        List<Map<String, Object>> top = RootCauses.topTensors(d.causes(), domain, TOP_TENSORS).stream().map(AlertOutbox::tensorJson).toList();
        List<String> causes = RootCauses.touching(d.causes(), domain).stream().map(RootCauses.CauseGroup::cause).toList();
        String topJson;
        String causesJson;
        try {
            topJson = JSON.writeValueAsString(top);
            causesJson = JSON.writeValueAsString(causes);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        Object[] values = {id, kind, d.load().deploymentId(), d.load().modelId(), d.previous().release(), d.load().release(),
                d.previous().loadId(), d.load().loadId(), before, after, after - before, rule,
                threshold == null ? null : threshold.percent(), threshold == null ? null : threshold.bytes(), topJson, Timestamp.from(now), suppressedBy,
                causesJson};
        try (PreparedStatement s = c.prepareStatement(insert)) {
            for (int i = 0; i < values.length; i++) {
                s.setObject(i + 1, values[i]);
            }
            s.executeUpdate();
        }
        return new StoredAlert(id, kind, d.load().deploymentId(), d.load().modelId(), d.previous().release(), d.load().release(), after - before,
                suppressedBy);
    }

    /** The budget or acknowledgement that covers this growth, described; null when none does. */
    private static String budget(Connection c, String deployment, String release, String kind, long delta) throws SQLException {
        try (PreparedStatement s = c.prepareStatement("SELECT max_delta_bytes, note FROM growth_budgets WHERE deployment_id = ? "
                + "AND release_name = ? AND kind = ?")) {
            s.setString(1, deployment);
            s.setString(2, release);
            s.setString(3, kind);
            try (ResultSet rs = s.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                long max = rs.getLong(1);
                boolean acknowledged = rs.wasNull();
                if (acknowledged) {
                    return "acknowledged: " + rs.getString(2);
                }
                return delta <= max ? "within budget of " + ByteSizes.format(max) + ": " + rs.getString(2) : null;
            }
        }
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
    public static List<String> readCauses(String json) throws java.io.IOException {
        return json == null ? List.of() : JSON.readValue(json, new com.fasterxml.jackson.core.type.TypeReference<List<String>>() { });
    }

    /** What was recorded, for metrics and logs. */
    public record StoredAlert(String alertId, String kind, String deploymentId, String modelId, String fromRelease, String release,
                              long deltaBytes, String suppressedBy) {
    }
}
