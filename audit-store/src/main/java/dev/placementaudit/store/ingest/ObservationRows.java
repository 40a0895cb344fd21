package dev.placementaudit.store.ingest;

import dev.placementaudit.events.Divergence;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.Sql;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.Collection;
import java.util.List;

/**
 * What a runtime said it did, as rows: each load's observation (the first in the log wins; a repeat changes nothing)
 * and the tensors its summary says the runtime placed otherwise than the reference. Written as they arrive, whether
 * or not their load is complete: the findings they give are drawn once both are in (see {@code RuntimeFindings}).
 */
final class ObservationRows {
    private static final List<String> OBSERVATION_COLUMNS = List.of("load_id", "deployment_id", "observed_at", "method", "heap_before",
            "heap_after", "direct_before", "direct_after", "mapped_before", "mapped_after", "file_mapped", "file_resident", "anon_rss_delta",
            "tensors_reported", "source_partition", "source_offset");
    private static final List<String> OBSERVATION_TYPES = List.of("VARCHAR(36)", "VARCHAR(200)", "TIMESTAMP WITH TIME ZONE", "VARCHAR(200)",
            "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "INTEGER", "INTEGER", "BIGINT");
    private static final List<String> DIVERGENCE_COLUMNS = List.of("load_id", "tensor_index", "tensor_name", "runtime_domain", "runtime_bytes",
            "reference_domain", "reference_bytes", "reference_reason_code", "reference_reason");
    private static final List<String> DIVERGENCE_TYPES = List.of("VARCHAR(36)", "INTEGER", "VARCHAR(1000)", "VARCHAR(20)", "BIGINT",
            "VARCHAR(20)", "BIGINT", "VARCHAR(40)", "VARCHAR(2000)");
    private final String insertObservation;
    private final String insertDivergence;

    ObservationRows(Dialect dialect) {
        this.insertObservation = dialect.insertIgnoringDuplicates("load_observations", OBSERVATION_COLUMNS, OBSERVATION_TYPES, "load_id");
        this.insertDivergence = dialect.insertIgnoringDuplicates("load_divergences", DIVERGENCE_COLUMNS, DIVERGENCE_TYPES,
                List.of("load_id", "tensor_index"));
    }

    void writeObservations(Connection c, Collection<Decoded.Observation> observations) throws SQLException {
        if (observations.isEmpty()) {
            return;
        }
        try (PreparedStatement insert = c.prepareStatement(insertObservation)) {
            for (Decoded.Observation observation : observations) {
                LoadObserved o = observation.event();
                Sql.bind(insert, o.getLoadId().toString(), o.getDeploymentId(), Timestamp.from(o.getObservedAt()),
                        Text.printable(o.getMethod().getName(), 200), o.getHeapUsedBeforeBytes(), o.getHeapUsedAfterBytes(), o.getDirectBeforeBytes(),
                        o.getDirectAfterBytes(), o.getMappedBeforeBytes(), o.getMappedAfterBytes(), o.getFileMappedBytes(), o.getFileResidentBytes(),
                        o.getAnonRssDeltaBytes(), o.getTensors().size(), observation.record().partition(), observation.record().offset());
                insert.addBatch();
            }
            insert.executeBatch();
        }
    }

    void writeDivergences(Connection c, Collection<Decoded.Summary> summaries) throws SQLException {
        PreparedStatement insert = null;
        try {
            for (Decoded.Summary summary : summaries) {
                LoadResolved l = summary.event();
                for (Divergence d : l.getDivergences()) {
                    if (insert == null) {
                        insert = c.prepareStatement(insertDivergence);
                    }
                    Sql.bind(insert, l.getLoadId().toString(), d.getTensorIndex(), Text.printable(d.getTensorName(), 1000), Text.printable(d.getRuntimeDomain(), 20),
                            d.getRuntimeResidentBytes(), Text.printable(d.getReferenceDomain(), 20), d.getReferenceResidentBytes(),
                            Text.printable(d.getReferenceReasonCode(), 40), Text.printable(d.getReferenceReason(), 2000));
                    insert.addBatch();
                }
            }
            if (insert != null) {
                insert.executeBatch();
            }
        } finally {
            if (insert != null) {
                insert.close();
            }
        }
    }
}
