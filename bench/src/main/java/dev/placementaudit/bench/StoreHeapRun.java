package dev.placementaudit.bench;

import dev.placementaudit.store.db.AuditDatabase;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code bench/run.sh store --store-heap 256m}: the store as its own process with a bounded heap, ingesting records
 * already published at full rate; its GC log gives the heap it used: the peak before a collection and the most that
 * stayed live after one.
 */
record StoreHeapRun(String bootstrap, Postgres pg, int loads) {

    /** Ingests the {@code decisions} published under topic base {@code base} with {@code -Xmx<heap>}, and writes the report. */
    void run(String heap, String base, long decisions) throws Exception {
        String schema = "bench_heap_" + Postgres.suffix();
        try (AuditDatabase db = pg.open(schema, 2)) {
            Path gcLog = Files.createTempFile("pa-store-gc", ".log");
            Path out = Files.createTempFile("pa-store-out", ".log");
            List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx" + heap,
                    "-Xlog:gc:file=" + gcLog, "-cp", System.getProperty("java.class.path"), "dev.placementaudit.store.cli.AuditStoreCli", "run"));
            Map<String, String> settings = new LinkedHashMap<>(Map.of("kafka.bootstrap.servers", bootstrap,
                    "store.decisions.topic", base + ".decided", "store.resolved.topic", base + ".resolved", "store.alerts.topic", base + ".alerts",
                    "store.chain.topic", base + ".chain", "store.group.id", schema, "store.jdbc.url", pg.url(), "store.jdbc.user", pg.user(),
                    "store.jdbc.schema", schema, "store.http.port", "-1"));
            settings.put("store.jdbc.password", pg.password());
            settings.forEach((k, v) -> {
                command.add("--set");
                command.add(k + "=" + v);
            });
            long started = System.nanoTime();
            Process store = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start();
            double seconds;
            try (Connection c = db.dataSource().getConnection(); PreparedStatement s = c.prepareStatement("SELECT COUNT(*) FROM loads WHERE complete = TRUE")) {
                while (true) {
                    try (ResultSet rs = s.executeQuery()) {
                        rs.next();
                        if (rs.getLong(1) >= loads) {
                            break;
                        }
                    }
                    if (!store.isAlive()) {
                        throw new IllegalStateException("the store exited: " + Files.readString(out));
                    }
                    Thread.sleep(20);
                }
                seconds = (System.nanoTime() - started) / 1e9;
            } finally {
                store.destroy();
                store.waitFor(30, TimeUnit.SECONDS);
            }
            long peakBefore = 0;
            long maxAfter = 0;
            // A young pause's "after" counts the old generation's garbage too; what a marking cycle (remark) or a full
            // collection leaves is what was live.
            long liveAfterMarking = 0;
            int collections = 0;
            Pattern pause = Pattern.compile("(\\d+)M->(\\d+)M\\((\\d+)M\\)");
            for (String line : Files.readAllLines(gcLog)) {
                Matcher m = pause.matcher(line);
                if (line.contains("Pause") && m.find()) {
                    collections++;
                    peakBefore = Math.max(peakBefore, Long.parseLong(m.group(1)));
                    maxAfter = Math.max(maxAfter, Long.parseLong(m.group(2)));
                    if (line.contains("Pause Remark") || line.contains("Pause Full")) {
                        liveAfterMarking = Math.max(liveAfterMarking, Long.parseLong(m.group(2)));
                    }
                }
            }
            String md = String.format(Locale.ROOT, "# audit-store heap, %s%n%n`bench/run.sh store --store-heap %s --loads %d`: the store as its own "
                            + "process with -Xmx%s (JVM start included in the time), ingesting %d decisions of %d loads from Kafka into PostgreSQL.%n%n"
                            + "| -Xmx | seconds | decisions/s | GC pauses | heap peak before a GC | most after a GC | most live after a marking or full GC |%n|---|---|---|---|---|---|---|%n"
                            + "| %s | %.2f | %.0f | %d | %d MiB | %d MiB | %d MiB |%n", LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME), heap,
                    loads, heap, decisions, loads, heap, seconds, decisions / seconds, collections, peakBefore, maxAfter, liveAfterMarking);
            System.out.println(md);
            Path file = Path.of("bench", "results", "store-heap-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + ".md");
            Files.writeString(file, md);
            System.out.println("written to " + file);
            try (Connection c = db.dataSource().getConnection()) {
                Postgres.drop(c, schema);
            }
        }
    }
}
