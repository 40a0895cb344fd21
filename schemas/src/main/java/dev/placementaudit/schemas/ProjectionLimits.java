package dev.placementaudit.schemas;

import java.time.Instant;
import java.util.Map;

/**
 * What the audit store's projection can hold of a model load, in one table: the worker refuses a load that exceeds it
 * (so the record is dead-lettered at the entrance, naming the field), and the store's DDL declares exactly these
 * column lengths ({@code ProjectionLimitsTest} in audit-store reads the migrations and fails on any drift).
 */
public final class ProjectionLimits {
    /** Column -> the most characters it holds, for every column a ModelLoaded field lands in. */
    public static final Map<String, Integer> COLUMNS = Map.ofEntries(
            Map.entry("loads.deployment_id", 200),
            Map.entry("loads.cluster", 200),
            Map.entry("loads.host", 200),
            Map.entry("loads.release_name", 200),
            Map.entry("loads.model_id", 200),
            Map.entry("loads.model_name", 500),
            Map.entry("loads.model_sha256", 64),
            Map.entry("loads.platform_name", 100),
            Map.entry("loads.profile_name", 100),
            Map.entry("decisions.tensor_name", 1000),
            Map.entry("decisions.dtype", 20),
            Map.entry("decisions.stored_encoding", 100));

    /**
     * The times a load may say it happened: from the Unix epoch to the end of year 9999. Both databases hold these
     * (PostgreSQL's timestamps end in year 294276; a long of milliseconds reaches year 292 million).
     */
    public static final Instant EARLIEST = Instant.EPOCH;
    public static final Instant LATEST = Instant.parse("9999-12-31T23:59:59.999Z");

    private ProjectionLimits() {
    }

    public static int of(String column) {
        Integer limit = COLUMNS.get(column);
        if (limit == null) {
            throw new IllegalArgumentException("no limit for column " + column);
        }
        return limit;
    }
}
