package dev.placementaudit.cli;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.testkit.TestDatabase;
import org.apache.kafka.clients.consumer.ConsumerRecord;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/** What the soak's services logged and what the topics and tables hold, read back to explain a failed invariant. */
final class SoakLogs {
    private static final EventSerde<LoadResolved> RESOLVED = EventSerde.of(LoadResolved.class);
    private final Path work;
    private final int stores;

    SoakLogs(Path work, int stores) {
        this.work = work;
        this.stores = stores;
    }

    static String rows(TestDatabase db, String sql) throws SQLException {
        StringBuilder text = new StringBuilder();
        try (Connection c = db.connect(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
                    text.append(i == 1 ? "\n  " : " ").append(rs.getString(i));
                }
            }
        }
        return text.toString();
    }

    static String whereOnTopic(List<ConsumerRecord<byte[], byte[]>> resolved, List<String> inputs) {
        StringBuilder text = new StringBuilder();
        for (ConsumerRecord<byte[], byte[]> record : resolved) {
            LoadResolved summary = RESOLVED.decode(record.value());
            if (inputs.contains(summary.getSourcePartition() + "@" + summary.getSourceOffset())) {
                text.append("\n  ").append(summary.getLoadId()).append(' ').append(record.partition()).append('@').append(record.offset())
                        .append(" <- ").append(summary.getSourcePartition()).append('@').append(summary.getSourceOffset());
            }
        }
        return text.toString();
    }

    /** The worker's log lines that name these input records or tell of a recovery, rewind, rebalance or start: the last 80. */
    String workerLines(List<String> inputs) {
        String log;
        try {
            log = workerLog();
        } catch (IOException e) {
            return "(the worker's log cannot be read: " + e + ")";
        }
        List<String> lines = log.lines().filter(line -> inputs.stream().anyMatch(input -> line.contains("-" + input))
                || line.contains("anew") || line.contains("redoing") || line.contains("aborted") || line.contains("partitions ")
                || line.contains("consuming model-loads") || line.contains("reconcil") || line.contains("isolating")).toList();
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 80), lines.size()));
    }

    /** Everything the worker logged, through every restart (each start keeps the last run's log in {@code .previous}). */
    String workerLog() throws IOException {
        StringBuilder text = new StringBuilder();
        for (String name : List.of("worker.log.previous", "worker.log")) {
            Path log = work.resolve(name);
            if (Files.exists(log)) {
                text.append(Files.readString(log)).append('\n');
            }
        }
        return text.toString();
    }

    /** The stores' log lines that name {@code word}, the last 40. */
    String logLines(String word) throws IOException {
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < stores; i++) {
            Path log = work.resolve("store-" + i + ".log");
            if (Files.exists(log)) {
                Files.readAllLines(log).stream().filter(l -> l.contains(word)).forEach(lines::add);
            }
        }
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    }
}
