package dev.placementaudit.store.alerts;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.regression.Detection;
import dev.placementaudit.store.regression.Finding;
import dev.placementaudit.store.regression.FindingKind;
import dev.placementaudit.store.regression.GrowthRule;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
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
            "top_tensors", "detected_at", "suppressed_by");
    private static final List<String> TYPES = List.of("VARCHAR(36)", "VARCHAR(30)", "VARCHAR(200)", "VARCHAR(200)", "VARCHAR(200)",
            "VARCHAR(200)", "VARCHAR(36)", "VARCHAR(36)", "BIGINT", "BIGINT", "BIGINT", "VARCHAR(500)", "DOUBLE PRECISION", "BIGINT",
            "VARCHAR(65535)", "TIMESTAMP WITH TIME ZONE", "VARCHAR(500)");

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
                    tensorsIn(detection, "HOST_OFFHEAP"), now));
        }
        for (Finding growth : detection.of(FindingKind.HEAP_GROWTH)) {
            alerts.add(alert(c, detection, "HEAP_GROWTH", growth.beforeBytes(), growth.afterBytes(), heap.describe(), heap,
                    tensorsIn(detection, "HOST_HEAP"), now));
        }
        List<Finding> lost = detection.of(FindingKind.LOST_MAPPING);
        if (!lost.isEmpty()) {
            long before = lost.stream().mapToLong(Finding::beforeBytes).sum();
            long after = lost.stream().mapToLong(Finding::afterBytes).sum();
            alerts.add(alert(c, detection, "LOST_MAPPING", 0, after, lost.size() + " tensor(s) no longer mapped; "
                    + ByteSizes.format(after) + " now charged to memory (were " + ByteSizes.format(before) + " of file pages)", null, lost, now));
        }
        return alerts;
    }

    private StoredAlert alert(Connection c, Detection d, String kind, long before, long after, String rule, GrowthRule threshold,
                              List<Finding> tensors, Instant now) throws SQLException {
        String id = UUID.nameUUIDFromBytes((kind + "/" + d.load().deploymentId() + "/" + d.load().modelId() + "/" + d.load().loadId())
                .getBytes(StandardCharsets.UTF_8)).toString();
        String suppressedBy = budget(c, d.load().deploymentId(), d.load().release(), kind, after - before);
        List<Map<String, Object>> top = tensors.stream()
                .sorted(Comparator.comparingLong((Finding f) -> Math.abs(f.deltaBytes())).reversed())
                .limit(TOP_TENSORS).map(AlertOutbox::tensorJson).toList();
        String topJson;
        try {
            topJson = JSON.writeValueAsString(top);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        Object[] values = {id, kind, d.load().deploymentId(), d.load().modelId(), d.previous().release(), d.load().release(),
                d.previous().loadId(), d.load().loadId(), before, after, after - before, rule,
                threshold == null ? null : threshold.percent(), threshold == null ? null : threshold.bytes(), topJson, Timestamp.from(now), suppressedBy};
        try (PreparedStatement s = c.prepareStatement(insert)) {
            for (int i = 0; i < values.length; i++) {
                s.setObject(i + 1, values[i]);
            }
            s.executeUpdate();
        }
        return new StoredAlert(id, kind, d.load().deploymentId(), d.load().release(), after - before, suppressedBy);
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

    private static List<Finding> tensorsIn(Detection d, String domain) {
        return d.findings().stream().filter(f -> f.tensorName() != null)
                .filter(f -> domain.equals(f.afterDomain()) || domain.equals(f.beforeDomain()))
                .filter(f -> f.kind() != FindingKind.FORMAT_CHANGED).toList();
    }

    private static Map<String, Object> tensorJson(Finding f) {
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("name", f.tensorName());
        t.put("beforeDomain", f.beforeDomain());
        t.put("afterDomain", f.afterDomain());
        t.put("beforeBytes", f.beforeBytes());
        t.put("afterBytes", f.afterBytes());
        t.put("beforeReason", f.beforeReason());
        t.put("afterReason", f.afterReason());
        return t;
    }

    /** What was recorded, for metrics and logs. */
    public record StoredAlert(String alertId, String kind, String deploymentId, String release, long deltaBytes, String suppressedBy) {
    }
}
