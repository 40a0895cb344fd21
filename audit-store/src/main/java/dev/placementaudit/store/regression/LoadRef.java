package dev.placementaudit.store.regression;

import java.time.Instant;
import java.util.Comparator;

/**
 * A stored load, as history queries need it; {@code planDigest} names its placement plan (null until it has one), and
 * {@code position} is where its summary stands in the log, which orders its deployment's history.
 */
public record LoadRef(String loadId, String deploymentId, String modelId, String release, Instant occurredAt, String resolverVersion,
                      String planDigest, Position position) {
    /** The columns {@link RegressionDetector#ref} reads, as a query over {@code loads} (no alias) selects them. */
    public static final String COLUMNS = "load_id, deployment_id, model_id, release_name, occurred_at, resolver_version, plan_digest, "
            + "summary_partition, summary_offset";

    /**
     * Whether the load {@code x} stands after the load {@code l} in the log (their summaries' positions; the load id
     * breaks a tie), as SQL over two rows of {@code loads} aliased {@code x} and {@code l}: {@link #IN_LOG_ORDER} in SQL.
     */
    public static final String LATER_IN_THE_LOG = "((x.summary_partition, x.summary_offset) > (l.summary_partition, l.summary_offset) OR "
            + "(x.summary_partition = l.summary_partition AND x.summary_offset = l.summary_offset AND x.load_id > l.load_id))";

    /**
     * Earlier in the log first; the load id breaks a tie (a summary published twice), so every reader orders alike. A load
     * stored before V13 has no position: it comes before any that has one.
     */
    public static final Comparator<LoadRef> IN_LOG_ORDER = Comparator.comparing(LoadRef::position, Comparator.nullsFirst(Comparator.naturalOrder()))
            .thenComparing(LoadRef::loadId);

    public LoadRef withPlan(String digest) {
        return new LoadRef(loadId, deploymentId, modelId, release, occurredAt, resolverVersion, digest, position);
    }

    /**
     * Where a load's summary stands in {@code load-resolved}: a deployment's summaries share one partition (the key is
     * the deployment) and the worker writes them in the order their loads were published, so this is the order the
     * deployment's loads happened in as far as the log can tell, whatever times the events carry (docs/adr/0006).
     */
    public record Position(int partition, long offset) implements Comparable<Position> {
        @Override
        public int compareTo(Position other) {
            int byPartition = Integer.compare(partition, other.partition);
            return byPartition != 0 ? byPartition : Long.compare(offset, other.offset);
        }
    }
}
