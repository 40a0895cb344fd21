package dev.placementaudit.store.ingest;

/**
 * What the ingest loop reports as it goes, to whoever counts it (the store's metrics): the loop knows nothing of how it
 * is counted, so the metrics depend on ingestion and not the other way round.
 */
public interface IngestListener {
    /** A batch committed, with everything it did. */
    void committed(BatchOutcome outcome);

    /** A record went to the dead letters, for this reason. */
    void deadLettered(String reason);

    /** Writing a batch failed (it is retried). */
    void ingestFailure();

    /** Alerts were published. */
    void published(int count);

    /** After every poll: what was deferred (gauge rows registered at most every few seconds) shows now. */
    void publishDeferred();

    /** The summaries were paused: they ran too far ahead of the decisions in a backlog ({@link SummaryPacing}). */
    void summariesPaused();
}
