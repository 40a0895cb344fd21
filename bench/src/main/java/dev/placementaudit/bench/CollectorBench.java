package dev.placementaudit.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.placementaudit.collector.Collector;
import dev.placementaudit.collector.CollectorConfig;
import dev.placementaudit.collector.Tokens;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.simulate.FleetSimulator;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.schemas.EventJson;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.Settings;
import dev.placementaudit.service.TopicSetup;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.GZIPOutputStream;

/**
 * The collector's throughput against a direct Kafka producer of the same events, in one run (#28): loads of a 1B model's
 * layout (llama-3.2-1b-q4km, 146 tensors), sent to the collector as gzip JSON batches of 100 by concurrent senders, and by
 * a direct producer (idempotent, acks=all, the collector's own producer settings) that encodes each event and waits for
 * every acknowledgement; alternated, median of the rounds. Then the batch latency at half the collector's rate, and the
 * collector's heap at full rate: the collector runs as its own JVM ({@code -Xmx256m}), whose GC log is read.
 *
 * <p>The senders' JSON and gzip are made before the clock starts: on a fleet that work is the devices', not the
 * collector's, and here it would take the collector's CPU (one machine holds the broker, the collector and the senders).
 */
public final class CollectorBench {
    private static final String TOKEN = "bench-token";
    private static final String JSON = "application/json";
    private static final String AVRO = "application/vnd.placement-audit.batch+avro";
    private static final Pattern GC_PAUSE = Pattern.compile("Pause.*?(\\d+)M->(\\d+)M\\((\\d+)M\\)");

    public static void main(String[] args) throws Exception {
        AvroTrust.install();
        BenchOptions options = new BenchOptions(args);
        int loads = options.integer("loads", 20_000);
        int rounds = options.integer("rounds", 3);
        int warmup = options.integer("warmup", 1);
        double seconds = options.decimal("seconds", 10);
        int senders = options.integer("senders", 8);
        int batchSize = options.integer("batch", 100);
        String bootstrap = System.getenv("KAFKA_BOOTSTRAP_SERVERS");
        String topic = "bench-collector-" + System.currentTimeMillis();
        Map<String, Object> kafka = Map.of("bootstrap.servers", bootstrap);
        TopicSetup.ensure(kafka, 3, (short) 1, List.of(), List.of(topic + "-direct", topic + "-collector", "bench-collector-observations"));

        System.out.printf("making %,d loads of llama-3.2-1b-q4km and their gzip JSON batches of %d...%n", loads, batchSize);
        List<ModelLoaded> events = events(loads);
        List<byte[]> bodies = bodies(events, batchSize);
        List<byte[]> avroBodies = avroBodies(events, batchSize);
        long rawJson = 0;
        long gzipped = bodies.stream().mapToLong(b -> b.length).sum();
        for (ModelLoaded e : events.subList(0, batchSize)) {
            rawJson += new ObjectMapper().writeValueAsBytes(EventJson.write(e)).length;
        }

        Path dir = Files.createTempDirectory("pa-bench-collector");
        Path gcLog = dir.resolve("collector-gc.log");
        Process collector = startCollector(bootstrap, topic + "-collector", gcLog, dir.resolve("collector.log"));
        String url = awaitUrl(dir.resolve("collector.log"), collector);
        HttpClient http = HttpClient.newBuilder().executor(Executors.newFixedThreadPool(senders)).build();
        Map<String, Object> producerConfig = Collector.producerConfigFor(CollectorConfig.from(Settings.of(Map.of("kafka.bootstrap.servers",
                bootstrap, "collector.fleets", "bench", "collector.fleet.bench.token.sha256", Tokens.sha256Hex(TOKEN),
                "collector.fleet.bench.deployments", "*"))));
        List<Double> direct = new ArrayList<>();
        List<Double> viaCollector = new ArrayList<>();
        List<Double> viaCollectorAvro = new ArrayList<>();
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(producerConfig, new StringSerializer(), new ByteArraySerializer())) {
            // Warm-up: whole rounds of each, not counted (the collector's JIT, and the direct producer's, take a round to settle).
            for (int round = 0; round < warmup; round++) {
                System.out.printf(Locale.ROOT, "warm-up %d: direct %,.0f, collector JSON %,.0f, Avro %,.0f loads/s%n", round + 1,
                        direct(producer, topic + "-direct", events, seconds), collector(http, url, bodies, senders, batchSize, JSON, seconds),
                        collector(http, url, avroBodies, senders, batchSize, AVRO, seconds));
            }
            for (int round = 0; round < rounds; round++) {
                direct.add(direct(producer, topic + "-direct", events, seconds));
                viaCollector.add(collector(http, url, bodies, senders, batchSize, JSON, seconds));
                viaCollectorAvro.add(collector(http, url, avroBodies, senders, batchSize, AVRO, seconds));
                System.out.printf(Locale.ROOT, "round %d: direct %,.0f loads/s, collector JSON %,.0f loads/s (%.2f), Avro %,.0f loads/s (%.2f)%n",
                        round + 1, direct.get(round), viaCollector.get(round), viaCollector.get(round) / direct.get(round),
                        viaCollectorAvro.get(round), viaCollectorAvro.get(round) / direct.get(round));
            }
            double rate = median(viaCollector);
            List<Double> latencies = paced(http, url, bodies, rate / 2, batchSize, senders, JSON);
            double avroRate = median(viaCollectorAvro);
            List<Double> avroLatencies = paced(http, url, avroBodies, avroRate / 2, batchSize, senders, AVRO);
            String heap = heap(gcLog);
            double ratio = median(viaCollector) / median(direct);
            StringBuilder md = new StringBuilder("# collector vs a direct producer, " + LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME)
                    + "\n\n`bench/run.sh collector --loads " + loads + " --rounds " + rounds + " --senders " + senders + " --batch " + batchSize
                    + " --warmup " + warmup + " --seconds " + seconds + "`: " + String.format(Locale.ROOT, "%,d", loads) + " loads of llama-3.2-1b-q4km (146 tensors); gzip JSON batches of "
                    + batchSize + " (" + String.format(Locale.ROOT, "%,d", rawJson / batchSize) + " bytes of JSON a load, "
                    + String.format(Locale.ROOT, "%,d", gzipped / bodies.size()) + " bytes gzip a batch) from " + senders
                    + " concurrent senders over loopback HTTP to the collector (its own JVM, -Xmx256m); the direct producer encodes each event and "
                    + "sends it with the collector's producer settings (idempotent, acks=all, lz4, linger 2 ms), waiting for every acknowledgement; "
                    + warmup + " uncounted round(s) of each first; each mode of each round sends its loads over and over for at least " + seconds
                    + " s (the 20,000 loads again when they run out). "
                    + "Broker: " + System.getenv().getOrDefault("PA_BENCH_BROKER", bootstrap) + "; " + Runtime.getRuntime().availableProcessors()
                    + " cores shared by broker, collector and senders.\n\n"
                    + "The same loads reach the collector two ways: gzip JSON (what a browser sends; parsed, validated, encoded to Avro) "
                    + "and gzip Avro frames (`" + AVRO + "`, what the Java client sends by default: decoded, validated, published as sent; "
                    + String.format(Locale.ROOT, "%,d", avroBodies.stream().mapToLong(b -> b.length).sum() / avroBodies.size()) + " bytes a batch).\n\n"
                    + "| round | direct producer (loads/s) | collector, JSON (loads/s) | ratio | collector, Avro (loads/s) | ratio |\n"
                    + "|---|---|---|---|---|---|\n");
            for (int i = 0; i < rounds; i++) {
                md.append(String.format(Locale.ROOT, "| %d | %,.0f | %,.0f | %.2f | %,.0f | %.2f |%n", i + 1, direct.get(i), viaCollector.get(i),
                        viaCollector.get(i) / direct.get(i), viaCollectorAvro.get(i), viaCollectorAvro.get(i) / direct.get(i)));
            }
            md.append(String.format(Locale.ROOT, "| **median** | **%,.0f** | **%,.0f** | **%.2f** | **%,.0f** | **%.2f** |%n%n", median(direct),
                    median(viaCollector), ratio, avroRate, avroRate / median(direct)));
            md.append(String.format(Locale.ROOT, "Batch latency at half the collector's rate, request sent to 202 received (acknowledged by the broker): "
                    + "JSON at %,.0f loads/s (%d batches paced) p50 %.1f ms, p99 %.1f ms, max %.1f ms; Avro at %,.0f loads/s p50 %.1f ms, "
                    + "p99 %.1f ms, max %.1f ms.%n%n", rate / 2, latencies.size(), percentile(latencies, 0.50), percentile(latencies, 0.99),
                    percentile(latencies, 1.0), avroRate / 2, percentile(avroLatencies, 0.50), percentile(avroLatencies, 0.99),
                    percentile(avroLatencies, 1.0)));
            md.append("Collector heap at full rate (-Xmx256m, its GC log): ").append(heap).append(".\n");
            System.out.println();
            System.out.print(md);
            Path out = Path.of("bench", "results", "collector-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + ".md");
            Files.writeString(out, md.toString());
            System.out.println("written to " + out);
        } finally {
            collector.destroy();
            collector.waitFor(30, TimeUnit.SECONDS);
            http.executor().ifPresent(e -> ((ExecutorService) e).shutdownNow());
        }
    }

    /** Loads of llama-3.2-1b-q4km from a simulated fleet of a deployment per 4 loads (BodyBenchmark's too). */
    static List<ModelLoaded> events(int loads) {
        List<ModelLoaded> events = new ArrayList<>(loads);
        for (ModelLoaded load : new FleetSimulator(7, Math.max(1, loads / 4), FleetSimulator.releaseNames(4),
                List.of(ModelCatalog.byId("llama-3.2-1b-q4km")), List.of(), Instant.parse("2026-11-01T00:00:00Z"))) {
            if (events.size() == loads) {
                break;
            }
            events.add(load);
        }
        return events;
    }

    static List<byte[]> bodies(List<ModelLoaded> events, int batchSize) throws IOException {
        ObjectMapper mapper = new ObjectMapper();
        List<byte[]> bodies = new ArrayList<>();
        for (int from = 0; from < events.size(); from += batchSize) {
            ObjectNode batch = mapper.createObjectNode();
            ArrayNode loads = batch.putArray("loads");
            events.subList(from, Math.min(events.size(), from + batchSize)).forEach(e -> loads.add(EventJson.write(e)));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (GZIPOutputStream zip = new GZIPOutputStream(out)) {
                mapper.writeValue(zip, batch);
            }
            bodies.add(out.toByteArray());
        }
        return bodies;
    }

    static List<byte[]> avroBodies(List<ModelLoaded> events, int batchSize) throws IOException {
        EventSerde<ModelLoaded> serde = EventSerde.of(ModelLoaded.class);
        List<byte[]> bodies = new ArrayList<>();
        for (int from = 0; from < events.size(); from += batchSize) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (DataOutputStream frames = new DataOutputStream(new GZIPOutputStream(out))) {
                for (ModelLoaded event : events.subList(from, Math.min(events.size(), from + batchSize))) {
                    byte[] encoded = serde.encode(event);
                    frames.writeInt(encoded.length);
                    frames.write(encoded);
                }
            }
            bodies.add(out.toByteArray());
        }
        return bodies;
    }

    private static Process startCollector(String bootstrap, String topic, Path gcLog, Path log) throws IOException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
                "-Xlog:gc:file=" + gcLog));
        // BENCH_COLLECTOR_JAVA_OPTS: a profiler for the collector's JVM, say (-XX:StartFlightRecording=filename=collector.jfr).
        String more = System.getenv("BENCH_COLLECTOR_JAVA_OPTS");
        if (more != null && !more.isBlank()) {
            command.addAll(List.of(more.trim().split("\\s+")));
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), "dev.placementaudit.collector.CollectorMain", "run",
                "--set", "kafka.bootstrap.servers=" + bootstrap, "--set", "collector.loads.topic=" + topic,
                "--set", "collector.observations.topic=bench-collector-observations", "--set", "collector.http.port=0",
                "--set", "collector.fleets=bench", "--set", "collector.fleet.bench.token.sha256=" + Tokens.sha256Hex(TOKEN),
                "--set", "collector.fleet.bench.deployments=*", "--set", "collector.rate.per.second=100000",
                "--set", "collector.rate.burst=100000", "--set", "collector.topics.create=false"));
        return new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    private static String awaitUrl(Path log, Process collector) throws Exception {
        Pattern url = Pattern.compile("at (http://127\\.0\\.0\\.1:\\d+)");
        for (int i = 0; i < 120; i++) {
            String text = Files.exists(log) ? Files.readString(log) : "";
            Matcher m = url.matcher(text);
            if (m.find()) {
                return m.group(1);
            }
            if (!collector.isAlive()) {
                throw new IllegalStateException("the collector exited: " + text);
            }
            Thread.sleep(250);
        }
        throw new IllegalStateException("the collector did not start in 30 s: " + Files.readString(log));
    }

    /**
     * Loads/s: the events encoded and sent, pass after pass until {@code seconds} have gone by, every acknowledgement
     * waited for (a single pass of 20,000 loads is over in about a second, too short to be steady).
     */
    private static double direct(KafkaProducer<String, byte[]> producer, String topic, List<ModelLoaded> events, double seconds) throws Exception {
        EventSerde<ModelLoaded> serde = EventSerde.of(ModelLoaded.class);
        long started = System.nanoTime();
        long deadline = started + (long) (seconds * 1e9);
        long sent = 0;
        do {
            List<Future<?>> acks = new ArrayList<>(events.size());
            for (ModelLoaded event : events) {
                acks.add(producer.send(new ProducerRecord<>(topic, event.getDeployment().getId(), serde.encode(event))));
            }
            for (Future<?> ack : acks) {
                ack.get();
            }
            sent += events.size();
        } while (System.nanoTime() < deadline);
        return sent / ((System.nanoTime() - started) / 1e9);
    }

    /** Loads/s: the batches posted by {@code senders} at once, over and over until {@code seconds} have gone by, each answered 202. */
    private static double collector(HttpClient http, String url, List<byte[]> bodies, int senders, int batchSize, String type, double seconds)
            throws Exception {
        AtomicInteger next = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(senders);
        long started = System.nanoTime();
        long deadline = started + (long) (seconds * 1e9);
        List<Future<Integer>> done = new ArrayList<>();
        for (int s = 0; s < senders; s++) {
            done.add(pool.submit(() -> {
                int sent = 0;
                for (int i = next.getAndIncrement(); i < bodies.size() || System.nanoTime() < deadline; i = next.getAndIncrement()) {
                    post(http, url, bodies.get(i % bodies.size()), type);
                    sent += batchSize;
                }
                return sent;
            }));
        }
        int loads = 0;
        for (Future<Integer> f : done) {
            loads += f.get();
        }
        double rate = loads / ((System.nanoTime() - started) / 1e9);
        pool.shutdown();
        return rate;
    }

    private static void post(HttpClient http, String url, byte[] body, String type) throws Exception {
        HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(url + "/v1/loads")).timeout(Duration.ofSeconds(60))
                .header("Authorization", "Bearer " + TOKEN).header("Content-Encoding", "gzip").header("Content-Type", type)
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 202) {
            throw new IllegalStateException("the collector answered " + response.statusCode() + ": " + response.body());
        }
    }

    /** Batch latencies (ms) with batches started at {@code loadsPerSecond}, each on a sender of its own when due. */
    private static List<Double> paced(HttpClient http, String url, List<byte[]> bodies, double loadsPerSecond, int batchSize, int senders,
                                      String type) throws Exception {
        long intervalNanos = (long) (batchSize / loadsPerSecond * 1e9);
        ExecutorService pool = Executors.newFixedThreadPool(senders * 2);
        List<Double> latencies = Collections.synchronizedList(new ArrayList<>());
        List<Future<?>> done = new ArrayList<>();
        long start = System.nanoTime();
        for (int i = 0; i < bodies.size(); i++) {
            long due = start + i * intervalNanos;
            long wait = due - System.nanoTime();
            if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
            }
            byte[] body = bodies.get(i);
            done.add(pool.submit(() -> {
                long sent = System.nanoTime();
                post(http, url, body, type);
                latencies.add((System.nanoTime() - sent) / 1e6);
                return null;
            }));
        }
        for (Future<?> f : done) {
            f.get();
        }
        pool.shutdown();
        return latencies;
    }

    /** Peak heap in use (before a collection) and the most still live after one, from the collector's GC log. */
    private static String heap(Path gcLog) throws IOException {
        int peak = 0;
        int live = 0;
        int committed = 0;
        int pauses = 0;
        for (String line : Files.readAllLines(gcLog)) {
            Matcher m = GC_PAUSE.matcher(line);
            if (m.find()) {
                pauses++;
                peak = Math.max(peak, Integer.parseInt(m.group(1)));
                live = Math.max(live, Integer.parseInt(m.group(2)));
                committed = Math.max(committed, Integer.parseInt(m.group(3)));
            }
        }
        return String.format(Locale.ROOT, "peak in use %d MiB, at most %d MiB live after a collection, heap at most %d MiB committed "
                + "(%d collections, none failed for want of heap)", peak, live, committed, pauses);
    }

    private static double median(List<Double> values) {
        return percentile(values, 0.5);
    }

    private static double percentile(List<Double> values, double p) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        int index = (int) Math.ceil(p * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, index)));
    }
}
