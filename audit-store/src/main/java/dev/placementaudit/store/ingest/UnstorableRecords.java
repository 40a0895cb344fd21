package dev.placementaudit.store.ingest;

import dev.placementaudit.service.DeadLetter;

import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Finds, by bisecting a batch in trial transactions that are rolled back, each record the database refuses as content,
 * so that one bad record never stops the rest: a few trials per refused record (about two per halving).
 */
final class UnstorableRecords {
    /** Writes the items and rolls back; throws what the database said. */
    @FunctionalInterface
    interface Trial {
        void run(List<Decoded> items) throws SQLException;
    }

    private final Trial trial;

    UnstorableRecords(Trial trial) {
        this.trial = trial;
    }

    /**
     * The batch with each record the database refuses replaced by a {@link Decoded.Reject} carrying the SQLSTATE and the
     * database's message. {@code refusal} is the content error writing the whole batch met, so the search starts from its
     * halves. An outage during the search is thrown.
     *
     * @throws IllegalArgumentException when {@code refusal} is no content error (an outage is waited out, not bisected)
     */
    List<Decoded> isolate(List<Decoded> batch, SQLException refusal) throws SQLException {
        if (SqlFailures.contentState(refusal).isEmpty()) {
            throw new IllegalArgumentException("not a content error: " + refusal);
        }
        List<Decoded> isolated = new ArrayList<>(batch);
        bisect(isolated, 0, isolated.size(), Optional.of(refusal));
        return isolated;
    }

    private void bisect(List<Decoded> batch, int from, int to, Optional<SQLException> known) throws SQLException {
        Optional<SQLException> refused = known.isPresent() ? known : attempt(batch.subList(from, to));
        if (refused.isEmpty()) {
            return;
        }
        if (to - from == 1) {
            Decoded item = batch.get(from);
            String state = SqlFailures.contentState(refused.get()).orElseThrow();
            batch.set(from, new Decoded.Reject(item.record(), DeadLetter.Reason.UNSTORABLE, "SQLSTATE " + state, SqlFailures.message(refused.get()),
                    loadId(item)));
            return;
        }
        int middle = (from + to) >>> 1;
        bisect(batch, from, middle, Optional.empty());
        bisect(batch, middle, to, Optional.empty());
    }

    /** Empty when the database takes the items, its content error when it refuses them. */
    private Optional<SQLException> attempt(List<Decoded> items) throws SQLException {
        try {
            trial.run(List.copyOf(items));
            return Optional.empty();
        } catch (SQLException e) {
            if (SqlFailures.contentState(e).isPresent()) {
                return Optional.of(e);
            }
            throw e;
        }
    }

    private static String loadId(Decoded item) {
        if (item instanceof Decoded.Decision decision) {
            return decision.event().getLoadId();
        }
        if (item instanceof Decoded.Summary summary) {
            return summary.event().getLoadId().toString();
        }
        return ((Decoded.Reject) item).loadId();
    }
}
