package dev.placementaudit.store.incidents;

import dev.placementaudit.events.IncidentEvent;
import dev.placementaudit.events.IncidentState;
import dev.placementaudit.events.PlacementIncident;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.Outage;
import dev.placementaudit.service.OutboxProducer;
import dev.placementaudit.service.Sends;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.db.Sql;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * Publishes incidents to {@code placement-alerts} as {@code PlacementIncident} events keyed by incident id: the state
 * an incident is in, whenever it differs from what was last published. Opening and reopening (a page) go out at once.
 * A resolution is held until it has stood for {@code interval}, as Alertmanager holds a resolved alert: an incident that
 * flaps (its last deployment moves on, the next one arrives on the release) publishes nothing until it settles, and
 * one that reopens within the hold publishes nothing new. Any other material change (deployments joining or leaving)
 * goes out at most once per {@code interval} per incident, the latest state then. A reload of a deployment already
 * showing the cause changes nothing material, so it publishes nothing. The latest event of a key is the incident as it
 * stands, so the topic can be compacted.
 *
 * <p>Shared by several store instances like the alert outbox: an instance leases the incidents it will publish (locked in
 * id order, skipping any another transaction holds) and marks them published once the broker has acknowledged; a crash in between republishes the same
 * version after the lease lapses (at least once; consumers keep the highest version of a key).
 */
public final class IncidentPublisher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(IncidentPublisher.class);
    /** Incidents published per call. */
    public static final int PAGE = 200;
    private static final Duration LEASE = Duration.ofSeconds(90);
    private static final int TENSORS_PER_EVENT = 100;

    private final DataSource database;
    private final String topic;
    private final Duration interval;
    private final String projection;
    private final Clock clock;
    private final Producer<String, PlacementIncident> producer;
    /** The broker away: said when it starts and when it ends, not at every sweep. */
    private final Outage outage = new Outage(LOG, "publishing incident events");

    /**
     * @param projection the store's projection (its group id): each event carries it, and is keyed
     *                   {@code incidentId@projection}, so two projections on one topic never overwrite each other's incidents
     */
    public IncidentPublisher(DataSource database, Map<String, Object> kafka, String topic, String projection, Duration interval, Clock clock) {
        this.database = database;
        this.topic = topic;
        this.projection = projection;
        this.interval = interval;
        this.clock = clock;
        this.producer = OutboxProducer.open(kafka, "audit-store-incidents", EventSerde.of(PlacementIncident.class));
    }

    /** @return how many incident events were published */
    public int publishPending() throws SQLException {
        Instant now = clock.instant();
        List<PlacementIncident> pending = claim(now);
        if (pending.isEmpty()) {
            return 0;
        }
        try {
            Sends.all(producer, pending.stream().map(i -> new ProducerRecord<>(topic, key(i.getIncidentId(), projection), i)).toList());
        } catch (Exception e) {
            outage.failed(pending.size() + " events, which go out on a later sweep: " + e);
            release(pending);
            return 0;
        }
        outage.ended();
        try (Connection c = database.getConnection();
             PreparedStatement s = c.prepareStatement("UPDATE incidents SET published_version = ?, published_state = ?, published_at = ?, "
                     + "claimed_by = NULL, claimed_until = NULL WHERE incident_id = ?")) {
            // In id order, as every writer of several incidents locks them: two never wait on each other in a circle.
            for (PlacementIncident i : pending.stream().sorted(Comparator.comparing(PlacementIncident::getIncidentId)).toList()) {
                Sql.bind(s, i.getVersion(), i.getState().name(), Timestamp.from(i.getPublishedAt()), i.getIncidentId());
                s.addBatch();
            }
            s.executeBatch();
        }
        pending.forEach(i -> LOG.info("incident {} {} published: {} {} -> {}, {} of {} deployment(s)", i.getIncidentId(), i.getEvent(),
                i.getModelId(), i.getFromRelease(), i.getToRelease(), i.getDeploymentsShowing(), i.getDeploymentsOnRelease()));
        return pending.size();
    }

    /**
     * Which incidents are due, with three parameters: the interval's start (twice) and now. Never published: at once (it
     * opened). Open again after a published resolution: at once. Resolved: once the resolution has stood for the interval
     * (the incident's last change is that old). Any other change: once the interval since the last event has passed.
     */
    private static final String DUE = "version > COALESCE(published_version, 0) AND (published_state IS NULL "
            + "OR (state <> 'RESOLVED' AND (published_state <> state OR published_at IS NULL OR published_at <= ?)) "
            + "OR (state = 'RESOLVED' AND updated_at <= ?)) AND (claimed_until IS NULL OR claimed_until < ?)";

    /** Up to a page of incidents whose state differs from what was last published and is due now, leased to this call. */
    private List<PlacementIncident> claim(Instant now) throws SQLException {
        Timestamp updatesBefore = Timestamp.from(now.minus(interval));
        Timestamp at = Timestamp.from(now);
        try (Connection c = database.getConnection()) {
            List<String> candidates = Sql.list(c, "SELECT incident_id FROM incidents WHERE " + DUE + " ORDER BY updated_at, incident_id FETCH FIRST "
                    + PAGE + " ROWS ONLY", rs -> rs.getString(1), updatesBefore, updatesBefore, at);
            if (candidates.isEmpty()) {
                return List.of();
            }
            String claim = UUID.randomUUID().toString();
            lease(c, candidates, claim, now, updatesBefore, at);
            List<PlacementIncident> claimed = new ArrayList<>();
            Map<String, String[]> published = new HashMap<>();
            try (PreparedStatement s = InList.prepare(c, "SELECT incident_id, version, published_state, tensors FROM incidents WHERE "
                    + "incident_id IN (%s) AND claimed_by = ?", candidates)) {
                s.setString(candidates.size() + 1, claim);
                try (var rs = s.executeQuery()) {
                    while (rs.next()) {
                        published.put(rs.getString(1), new String[]{Long.toString(rs.getLong(2)), rs.getString(3), rs.getString(4)});
                    }
                }
            }
            try {
                for (String id : candidates) {
                    String[] row = published.get(id);
                    if (row == null) {
                        continue;
                    }
                    Incidents.Detail detail = Incidents.find(c, id).orElseThrow();
                    claimed.add(event(detail.incident(), Long.parseLong(row[0]), row[1], detail.tensors(), now));
                }
            } catch (SQLException | RuntimeException e) {
                // What this call claimed goes back at once, not when the lease lapses.
                unclaim(c, candidates, claim);
                throw e;
            }
            return claimed;
        }
    }

    /** The key of a projection's incident on the topic: its latest event there is the incident as that projection holds it. */
    public static String key(String incidentId, String projection) {
        return incidentId + "@" + projection;
    }

    private PlacementIncident event(Incidents.Incident i, long version, String publishedState, List<String> tensors, Instant now) {
        IncidentEvent event = publishedState == null ? IncidentEvent.OPENED
                : publishedState.equals(i.state()) ? IncidentEvent.UPDATED
                : i.open() ? IncidentEvent.REOPENED : IncidentEvent.RESOLVED;
        return PlacementIncident.newBuilder()
                .setIncidentId(i.incidentId()).setProjection(projection).setEvent(event).setState(IncidentState.valueOf(i.state())).setVersion(version)
                .setModelId(i.modelId()).setFromRelease(i.fromRelease()).setToRelease(i.toRelease())
                .setPrimaryKind(i.primaryKind()).setKinds(i.kinds()).setCause(i.cause())
                .setTensorCount(i.tensorCount()).setTensors(tensors.subList(0, Math.min(TENSORS_PER_EVENT, tensors.size())))
                .setDeploymentsShowing(i.showing()).setDeploymentsAffected(i.affected()).setDeploymentsOnRelease(i.onRelease())
                .setExposure(i.exposure()).setBytesMoved(i.bytesMoved()).setOffHeapDeltaBytes(i.offHeapDelta())
                .setFirstSeen(i.firstSeen()).setLastSeen(i.lastSeen())
                .setAcknowledgedBy(i.acknowledged() == null ? null : i.acknowledged().by())
                .setAcknowledgedNote(i.acknowledged() == null ? null : i.acknowledged().note())
                .setPublishedAt(now)
                .build();
    }

    /**
     * Leases the candidates still due to {@code claim}: each row locked in id order, as the ingest's ledger locks them,
     * and one that another transaction holds (a batch settling it, another instance's claim) skipped, not waited for:
     * it is due again at the next sweep. Two instances' claims and a batch never deadlock on the incidents.
     */
    private static void lease(Connection c, List<String> candidates, String claim, Instant now, Timestamp updatesBefore, Timestamp at)
            throws SQLException {
        boolean autoCommit = c.getAutoCommit();
        c.setAutoCommit(false);
        try {
            List<String> locked = new ArrayList<>();
            try (PreparedStatement s = InList.prepare(c, "SELECT incident_id FROM incidents WHERE incident_id IN (%s) AND " + DUE
                    + " ORDER BY incident_id FOR UPDATE SKIP LOCKED", candidates)) {
                s.setTimestamp(candidates.size() + 1, updatesBefore);
                s.setTimestamp(candidates.size() + 2, updatesBefore);
                s.setTimestamp(candidates.size() + 3, at);
                try (var rs = s.executeQuery()) {
                    while (rs.next()) {
                        locked.add(rs.getString(1));
                    }
                }
            }
            if (!locked.isEmpty()) {
                try (PreparedStatement s = InList.prepare(c, "UPDATE incidents SET claimed_by = ?, claimed_until = ? WHERE incident_id IN (%s)",
                        locked, 3)) {
                    s.setString(1, claim);
                    s.setTimestamp(2, Timestamp.from(now.plus(LEASE)));
                    s.executeUpdate();
                }
            }
            c.commit();
        } catch (SQLException | RuntimeException e) {
            c.rollback();
            throw e;
        } finally {
            c.setAutoCommit(autoCommit);
        }
    }

    /** Gives back the lease on these incidents (only {@code claim}'s, when given), a row at a time in id order. */
    private static void unclaim(Connection c, List<String> ids, String claim) throws SQLException {
        try (PreparedStatement s = c.prepareStatement("UPDATE incidents SET claimed_by = NULL, claimed_until = NULL WHERE incident_id = ?"
                + (claim == null ? "" : " AND claimed_by = ?"))) {
            for (String id : ids.stream().sorted().toList()) {
                s.setString(1, id);
                if (claim != null) {
                    s.setString(2, claim);
                }
                s.executeUpdate();
            }
        }
    }

    private void release(List<PlacementIncident> pending) {
        try (Connection c = database.getConnection()) {
            unclaim(c, pending.stream().map(PlacementIncident::getIncidentId).toList(), null);
        } catch (SQLException e) {
            LOG.warn("cannot release the lease on {} incidents (it lapses within {} s): {}", pending.size(), LEASE.toSeconds(), e.toString());
        }
    }

    @Override
    public void close() {
        producer.close(Duration.ofSeconds(10));
    }
}
