package dev.placementaudit.store.ingest;

/**
 * Where an ingest batch's time goes, in the order a batch goes through them ({@code pa_store_batch_phase_seconds{phase}}):
 * what an operator reads to tell what a store that falls behind spends its time on.
 */
public enum BatchPhase {
    /** The batch's own rows: decisions (or their plans), dead letters, observations, the source offsets. */
    ROWS,
    /**
     * Locking the batch's deployments (in one order), so that exactly one of two stores completes each load: long when
     * another store's transaction holds the same deployments.
     */
    LOCK,
    /** Completing the loads that are now whole: their load rows, and the stragglers of staged rows dropped. */
    COMPLETE,
    /** Moving each deployment's chain head on past the loads it completed. */
    CHAIN,
    /** Comparing each completed load with the deployment's previous one: findings, alerts, incidents. */
    DETECT,
    /** Drawing what runtimes observed against the plans, and keeping their incidents. */
    RUNTIME,
    /** The database's commit. */
    COMMIT
}
