package dev.placementaudit.store.ingest;

import dev.placementaudit.store.db.Dialect;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The consumer offsets a projection keeps with its rows, in the same transaction (docs/adr/0001): on every assignment the
 * consumer seeks to them, so a batch is applied once whatever crashes.
 */
final class StoredOffsets {
    private static final List<String> COLUMNS = List.of("consumer_group", "topic", "partition_id", "next_offset");
    private static final List<String> TYPES = List.of("VARCHAR(200)", "VARCHAR(249)", "INTEGER", "BIGINT");

    private final String groupId;
    private final String upsert;

    StoredOffsets(Dialect dialect, String groupId) {
        this.groupId = groupId;
        this.upsert = dialect.upsert("ingest_offsets", COLUMNS, TYPES, List.of("consumer_group", "topic", "partition_id"));
    }

    /** Advances each partition the batch read to the offset after its last record, in the batch's transaction. */
    void store(Connection c, List<Decoded> batch) throws SQLException {
        Map<TopicPartition, Long> next = new HashMap<>();
        // A poll's records come partition by partition: one map update per run of a partition, not per record.
        ConsumerRecord<byte[], byte[]> last = null; // the run's record with the highest offset
        for (Decoded item : batch) {
            ConsumerRecord<byte[], byte[]> record = item.record();
            if (last != null && (last.partition() != record.partition() || !last.topic().equals(record.topic()))) {
                next.merge(new TopicPartition(last.topic(), last.partition()), last.offset() + 1, Math::max);
                last = null;
            }
            if (last == null || record.offset() > last.offset()) {
                last = record;
            }
        }
        if (last != null) {
            next.merge(new TopicPartition(last.topic(), last.partition()), last.offset() + 1, Math::max);
        }
        try (PreparedStatement s = c.prepareStatement(upsert)) {
            for (Map.Entry<TopicPartition, Long> e : next.entrySet()) {
                s.setString(1, groupId);
                s.setString(2, e.getKey().topic());
                s.setInt(3, e.getKey().partition());
                s.setLong(4, e.getValue());
                s.addBatch();
            }
            s.executeBatch();
        }
    }

    /** The offsets this group has stored for the partitions; absent ones have never been written. */
    Map<TopicPartition, Long> read(DataSource database, Collection<TopicPartition> partitions) throws SQLException {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        try (Connection c = database.getConnection();
             PreparedStatement s = c.prepareStatement("SELECT next_offset FROM ingest_offsets WHERE consumer_group = ? AND topic = ? AND partition_id = ?")) {
            for (TopicPartition partition : partitions) {
                s.setString(1, groupId);
                s.setString(2, partition.topic());
                s.setInt(3, partition.partition());
                try (ResultSet rs = s.executeQuery()) {
                    if (rs.next()) {
                        offsets.put(partition, rs.getLong(1));
                    }
                }
            }
        }
        return offsets;
    }
}
