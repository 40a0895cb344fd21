package dev.placementaudit.worker.pipeline;

/**
 * Where the resolver loop is, and the moves it may make from there, checked at every move as Kafka's
 * {@code TransactionManager} checks its own: a batch is sent only after a poll, committed only after it was sent, and
 * nothing runs once the loop has stopped. A move the loop was not written to make is a bug, and stops it loudly.
 */
enum LoopState {
    /** Making the transactional producers and joining the group. */
    STARTING,
    /** Waiting for input, or taking the next batch from those polled ahead. */
    POLLING,
    /** A transaction is open: the batch's outputs are being sent, the next batches polled and prepared meanwhile. */
    SENDING,
    /** The batch's offsets and end of transaction are on their way, on this thread or the committing one. */
    COMMITTING,
    /** After a failed transaction, one transaction per record, so that one bad record is dead-lettered alone. */
    ISOLATING,
    /** A producer could not go on: made anew, and the consumer rewound to the committed offsets. */
    RECOVERING,
    STOPPED;

    boolean canMoveTo(LoopState next) {
        return switch (next) {
            case STARTING -> false;
            case POLLING -> this != STOPPED;
            case SENDING, ISOLATING -> this == POLLING;
            case COMMITTING -> this == SENDING;
            case RECOVERING -> this != STOPPED;
            case STOPPED -> true;
        };
    }
}
