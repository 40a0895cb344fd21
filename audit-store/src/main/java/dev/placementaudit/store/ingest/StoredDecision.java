package dev.placementaudit.store.ingest;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.ReasonCode;

import java.util.List;
import java.util.stream.Collectors;

/** How an AllocationDecided becomes a {@code decisions} row: column order, SQL types, and the limits of the columns. */
final class StoredDecision {
    static final List<String> COLUMNS = List.of("decision_id", "load_id", "tensor_name", "tensor_index", "dtype", "stored_encoding",
            "stored_format", "element_count", "stored_bytes", "resident_format", "resident_bytes", "memory_domain", "scope_kind",
            "mapping_requested", "reason_code", "placement_reason", "mapping_blockers", "reason", "resolver_version", "policy_digest",
            "source_partition", "source_offset", "size_estimated");
    static final List<String> TYPES = List.of("VARCHAR(36)", "VARCHAR(36)", "VARCHAR(1000)", "INTEGER", "VARCHAR(20)", "VARCHAR(100)",
            "VARCHAR(150)", "BIGINT", "BIGINT", "VARCHAR(150)", "BIGINT", "VARCHAR(20)", "VARCHAR(10)",
            "BOOLEAN", "VARCHAR(40)", "VARCHAR(40)", "VARCHAR(200)", "VARCHAR(4000)", "VARCHAR(100)", "VARCHAR(64)",
            "INTEGER", "BIGINT", "BOOLEAN");

    private StoredDecision() {
    }

    /** The column a value would overflow, or null when the decision fits. */
    static String overflow(AllocationDecided d) {
        if (d.getTensorName().length() > 1000) {
            return "tensor_name (" + d.getTensorName().length() + " characters, at most 1000)";
        }
        if (d.getReason().length() > 4000) {
            return "reason (" + d.getReason().length() + " characters, at most 4000)";
        }
        if (d.getStoredEncoding().length() > 100 || d.getStoredFormat().length() > 150 || d.getResidentFormat().length() > 150
                || d.getResolverVersion().length() > 100) {
            return "an encoding, format or resolver version over its column's length";
        }
        return null;
    }

    static Object[] values(AllocationDecided d) {
        return new Object[]{d.getDecisionId(), d.getLoadId(), d.getTensorName(), d.getTensorIndex(), d.getDtype(), d.getStoredEncoding(),
                d.getStoredFormat(), d.getElementCount(), d.getStoredBytes(), d.getResidentFormat(), d.getResidentBytes(),
                d.getDomain().name(), d.getScope().name(), d.getMappingRequested(), d.getReasonCode().name(), d.getPlacementReason().name(),
                d.getMappingBlockers().stream().map(ReasonCode::name).collect(Collectors.joining(",")), d.getReason(),
                d.getResolverVersion(), d.getPolicyDigest(), d.getSourcePartition(), d.getSourceOffset(), d.getSizeEstimated()};
    }
}
