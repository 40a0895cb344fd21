package dev.placementaudit.worker.pipeline;

import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A topic's log as the broker wrote it, read from its segment files: which batch each offset is in, which producer
 * (id and epoch) wrote it, and where the transaction markers are. What a test prints when a read_committed consumer saw
 * a record twice, to tell a transaction committed twice from an aborted one that became visible.
 */
final class TopicLog {
    private TopicLog() {
    }

    /** One line per batch of every partition of {@code topic} kept under {@code logDirectory}. */
    static String describe(Path logDirectory, String topic) {
        StringBuilder out = new StringBuilder();
        try (Stream<Path> partitions = Files.list(logDirectory)) {
            for (Path partition : partitions.filter(p -> p.getFileName().toString().matches(Pattern.quote(topic) + "-\\d+")).sorted().toList()) {
                out.append(partition.getFileName()).append('\n');
                try (Stream<Path> segments = Files.list(partition)) {
                    for (Path segment : segments.filter(p -> p.toString().endsWith(".log")).sorted().toList()) {
                        describeSegment(segment, out);
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString();
    }

    private static void describeSegment(Path segment, StringBuilder out) throws IOException {
        try (FileRecords records = FileRecords.open(segment.toFile(), false)) {
            for (RecordBatch batch : records.batches()) {
                out.append(String.format("  %d..%d pid %d epoch %d%s", batch.baseOffset(), batch.lastOffset(), batch.producerId(),
                        batch.producerEpoch(), batch.isTransactional() ? " txn" : ""));
                if (batch.isControlBatch()) {
                    List<String> types = new ArrayList<>();
                    for (Record record : batch) {
                        types.add(ControlRecordType.parse(record.key()).name());
                    }
                    out.append(" control ").append(types);
                }
                out.append('\n');
            }
        }
    }
}
