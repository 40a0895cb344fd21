package dev.placementaudit.store.alerts;

import dev.placementaudit.events.AlertKind;
import dev.placementaudit.events.AlertTensor;
import dev.placementaudit.events.PlacementAlert;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.OutboxProducer;
import dev.placementaudit.service.Sends;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.incidents.IncidentPublisher;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * Drains the outboxes to the {@code placement-alerts} topic: the incidents ({@link IncidentPublisher}) and, where
 * {@code store.alerts.per.load} asks for them, the per-load alerts. For those it claims a page of unsuppressed, unpublished alerts,
 * publishes them, waits for the broker's acknowledgement, then marks them published. A crash between the two
 * republishes them with the same alertId once the claim has lapsed (at least once; consumers dedupe on the id), never
 * loses them.
 *
 * <p>Several store instances share one outbox. Each call first takes a lease ({@link #LEASE}) on the alerts it will
 * publish, with one conditional {@code UPDATE}: under read committed, of two instances racing for the same rows the
 * second waits for the first's row locks and then finds them claimed, so without a crash each alert is published by
 * one instance, once. A lease that lapses (its instance died mid-publication) lets another instance take the alerts.
 */
public final class AlertPublisher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AlertPublisher.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Alerts read and published per call: a call that publishes this many may have left more. */
    public static final int PAGE = 500;
    /** How long a claim keeps other instances off the alerts it covers: well past a publication's 30 s bound. */
    static final Duration LEASE = Duration.ofSeconds(90);

    private final DataSource database;
    private final String topic;
    private final Producer<String, PlacementAlert> producer;
    private final boolean perLoad;
    private final String projection;
    private final IncidentPublisher incidents;

    /** Publishes the per-load alert outbox only. */
    public AlertPublisher(DataSource database, Map<String, Object> kafka, String topic, String projection) {
        this(database, kafka, topic, projection, true, null);
    }

    /**
     * @param perLoad   whether the per-load alerts go to the topic too ({@code store.alerts.per.load}); when not, they are
     *                  recorded (the CLI and API read them) but the topic carries incidents alone
     * @param incidents what publishes the incidents, or null
     * @param projection the store's projection (its group id), which every alert carries
     */
    public AlertPublisher(DataSource database, Map<String, Object> kafka, String topic, String projection, boolean perLoad,
                          IncidentPublisher incidents) {
        this.database = database;
        this.topic = topic;
        this.projection = projection;
        this.perLoad = perLoad;
        this.incidents = incidents;
        this.producer = OutboxProducer.open(kafka, "audit-store-alerts", EventSerde.of(PlacementAlert.class));
    }

    /** @return how many alert and incident events were published */
    public int publishPending() throws SQLException {
        // Each outbox on its own: one that cannot be published (its table or the broker failing it) does not hold the other up.
        int published = 0;
        SQLException failed = null;
        if (incidents != null) {
            try {
                published += incidents.publishPending();
            } catch (SQLException e) {
                failed = e;
            }
        }
        if (perLoad) {
            published += publishAlerts();
        }
        if (failed != null) {
            throw failed;
        }
        return published;
    }

    private int publishAlerts() throws SQLException {
        List<PlacementAlert> pending = claim();
        if (pending.isEmpty()) {
            return 0;
        }
        try {
            Sends.all(producer, pending.stream().map(a -> new ProducerRecord<>(topic, a.getDeploymentId(), a)).toList());
        } catch (Exception e) {
            LOG.warn("publishing {} alerts failed; they stay in the outbox: {}", pending.size(), e.toString());
            update("UPDATE alerts SET claimed_by = NULL, claimed_until = NULL WHERE alert_id IN (%s) AND published_at IS NULL", null, pending);
            return 0;
        }
        update("UPDATE alerts SET published_at = ? WHERE alert_id IN (%s)", Timestamp.from(Instant.now()), pending);
        pending.forEach(a -> LOG.info("alert {} {} on {} {} -> {}: {} ({})", a.getAlertId(), a.getKind(), a.getDeploymentId(),
                a.getFromRelease(), a.getToRelease(), a.getDeltaBytes(), a.getRule()));
        return pending.size();
    }

    /**
     * Up to a page of the oldest unpublished alerts no live claim covers, claimed for this call: read, leased by one
     * conditional update, and read back as this claim's (a row another instance claimed in between is not).
     */
    private List<PlacementAlert> claim() throws SQLException {
        Instant now = Instant.now();
        List<String> candidates = new ArrayList<>();
        try (Connection c = database.getConnection();
             PreparedStatement s = c.prepareStatement("SELECT alert_id FROM alerts WHERE published_at IS NULL AND suppressed_by IS NULL "
                     + "AND (claimed_until IS NULL OR claimed_until < ?) ORDER BY detected_at, alert_id FETCH FIRST " + PAGE + " ROWS ONLY")) {
            s.setTimestamp(1, Timestamp.from(now));
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    candidates.add(rs.getString(1));
                }
            }
        }
        if (candidates.isEmpty()) {
            return List.of();
        }
        String claim = UUID.randomUUID().toString();
        List<PlacementAlert> claimed = new ArrayList<>();
        try (Connection c = database.getConnection()) {
            try (PreparedStatement s = InList.prepare(c, "UPDATE alerts SET claimed_by = ?, claimed_until = ? WHERE alert_id IN (%s) "
                    + "AND published_at IS NULL AND (claimed_until IS NULL OR claimed_until < ?)", candidates, 3)) {
                s.setString(1, claim);
                s.setTimestamp(2, Timestamp.from(now.plus(LEASE)));
                s.setTimestamp(candidates.size() + 3, Timestamp.from(now));
                s.executeUpdate();
            }
            try (PreparedStatement s = InList.prepare(c, "SELECT a.*, " + AlertOutbox.TEXT_TOP_TENSORS + " AS text_top_tensors, " + AlertOutbox.TEXT_CAUSES
                    + " AS text_causes FROM alerts a " + AlertOutbox.withText("") + " WHERE a.alert_id IN (%s) AND a.claimed_by = ? ORDER BY a.detected_at, "
                    + "a.alert_id", candidates)) {
                s.setString(candidates.size() + 1, claim);
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        claimed.add(alert(rs));
                    }
                }
            }
        }
        return claimed;
    }

    /** One statement, one commit, not one per alert: {@code sql} has the alerts' ids as its IN list, after {@code value} if any. */
    private void update(String sql, Object value, List<PlacementAlert> alerts) throws SQLException {
        List<String> ids = alerts.stream().map(PlacementAlert::getAlertId).toList();
        try (Connection c = database.getConnection(); PreparedStatement s = InList.prepare(c, sql, ids, value == null ? 1 : 2)) {
            if (value != null) {
                s.setObject(1, value);
            }
            s.executeUpdate();
        }
    }

    private PlacementAlert alert(ResultSet rs) throws SQLException {
        List<Map<String, Object>> top;
        try {
            top = JSON.readValue(rs.getString("text_top_tensors"), new TypeReference<>() { });
        } catch (IOException e) {
            throw new SQLException("alert " + rs.getString("alert_id") + " has unreadable top_tensors", e);
        }
        List<String> causes;
        try {
            causes = AlertOutbox.readCauses(rs.getString("text_causes"));
        } catch (IOException e) {
            throw new SQLException("alert " + rs.getString("alert_id") + " has unreadable causes", e);
        }
        double percent = rs.getDouble("threshold_percent");
        Double thresholdPercent = rs.wasNull() ? null : percent;
        long bytes = rs.getLong("threshold_bytes");
        Long thresholdBytes = rs.wasNull() ? null : bytes;
        return PlacementAlert.newBuilder()
                .setAlertId(rs.getString("alert_id"))
                .setKind(AlertKind.valueOf(rs.getString("kind")))
                .setDeploymentId(rs.getString("deployment_id"))
                .setModelId(rs.getString("model_id"))
                .setFromRelease(rs.getString("from_release"))
                .setToRelease(rs.getString("to_release"))
                .setFromLoadId(rs.getString("from_load_id"))
                .setToLoadId(rs.getString("to_load_id"))
                .setBeforeBytes(rs.getLong("before_bytes"))
                .setAfterBytes(rs.getLong("after_bytes"))
                .setDeltaBytes(rs.getLong("delta_bytes"))
                .setRule(rs.getString("rule_text"))
                .setThresholdPercent(thresholdPercent)
                .setThresholdBytes(thresholdBytes)
                .setTopTensors(top.stream().map(t -> AlertTensor.newBuilder()
                        .setName(String.valueOf(t.get("name")))
                        .setBeforeDomain((String) t.get("beforeDomain"))
                        .setAfterDomain((String) t.get("afterDomain"))
                        .setBeforeBytes(((Number) t.get("beforeBytes")).longValue())
                        .setAfterBytes(((Number) t.get("afterBytes")).longValue())
                        .setBeforeReason((String) t.get("beforeReason"))
                        .setAfterReason((String) t.get("afterReason"))
                        .build()).toList())
                .setDetectedAt(rs.getTimestamp("detected_at").toInstant())
                .setCauses(causes)
                .setProjection(projection)
                .build();
    }

    @Override
    public void close() {
        if (incidents != null) {
            incidents.close();
        }
        producer.close(Duration.ofSeconds(10));
    }
}
