package dev.placementaudit.store.ingest;

import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.store.db.Dialect;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * A row per record set aside ({@code dead_letters}), so that its load shows what it is missing and why, and holds
 * nothing up once its decisions cannot all come (docs/adr/0006); idempotent on the record's position.
 */
final class DeadLetterRows {
    private static final List<String> COLUMNS = List.of("source_topic", "source_partition", "source_offset", "load_id", "reason",
            "detail", "error", "dead_lettered_at");
    private static final List<String> TYPES = List.of("VARCHAR(249)", "INTEGER", "BIGINT", "VARCHAR(36)", "VARCHAR(40)",
            "VARCHAR(200)", "VARCHAR(2000)", "TIMESTAMP WITH TIME ZONE");
    /** A load id is kept on a dead letter only when it is one: the id itself may be what was refused. */
    private static final Pattern UUID_TEXT = Pattern.compile("[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}");

    private final String upsert;

    DeadLetterRows(Dialect dialect) {
        this.upsert = dialect.upsert("dead_letters", COLUMNS, TYPES, List.of("source_topic", "source_partition", "source_offset"));
    }

    /** A record set aside: where it was, its load when it names one, and why. */
    record Letter(String topic, int partition, long offset, String loadId, DeadLetter.Reason reason, String detail, String error) {
    }

    /** The batch's rejects, a row each. */
    void record(Connection c, List<Decoded> batch, Instant now) throws SQLException {
        List<Letter> letters = new ArrayList<>();
        for (Decoded item : batch) {
            if (item instanceof Decoded.Reject reject) {
                letters.add(new Letter(reject.record().topic(), reject.record().partition(), reject.record().offset(), reject.loadId(),
                        reject.reason(), reject.detail(), reject.error()));
            }
        }
        write(c, letters, now);
    }

    /** These letters, a row each (idempotent on the record's position). */
    void write(Connection c, List<Letter> letters, Instant now) throws SQLException {
        if (letters.isEmpty()) {
            return;
        }
        try (PreparedStatement s = c.prepareStatement(upsert)) {
            for (Letter letter : letters) {
                String loadId = letter.loadId() != null && UUID_TEXT.matcher(letter.loadId()).matches() ? letter.loadId() : null;
                Object[] values = {letter.topic(), letter.partition(), letter.offset(), loadId, letter.reason().name(),
                        Text.printable(letter.detail(), 200), Text.printable(letter.error() == null ? "" : letter.error(), 2_000), Timestamp.from(now)};
                for (int i = 0; i < values.length; i++) {
                    s.setObject(i + 1, values[i]);
                }
                s.addBatch();
            }
            s.executeBatch();
        }
    }
}
