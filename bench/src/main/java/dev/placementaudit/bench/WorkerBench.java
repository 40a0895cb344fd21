package dev.placementaudit.bench;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.simulate.FleetSimulator;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.Settings;
import dev.placementaudit.testkit.KafkaFixture;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.WorkerVersion;
import dev.placementaudit.worker.pipeline.ResolverWorker;
import dev.placementaudit.worker.resolve.LoadResolution;
import dev.placementaudit.worker.resolve.LoadValidator;
import dev.placementaudit.worker.resolve.Provenance;
import dev.placementaudit.worker.resolve.ResolvedLoad;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * Resolver-worker throughput against two raw Kafka baselines, in one run, on one broker, with the same client
 * settings (max.poll.records, linger, batch size, lz4, acks=all, EOS v2 transactions per poll):
 * <ul>
 *   <li><b>passthrough</b>: copy each ModelLoaded record to an output topic, exactly once;</li>
 *   <li><b>fan-out</b>: for each ModelLoaded, write the worker's real output bytes (one pre-encoded decision per
 *       tensor and a summary, taken from resolving one load beforehand), exactly once - everything the worker
 *       does except decode, validate, resolve and encode;</li>
 *   <li><b>worker</b>: the real ResolverWorker.</li>
 * </ul>
 * Each mode starts its own consumer group from offset 0 of the same pre-filled input topic; time is measured from
 * client start to the last commit, so group join costs all three the same.
 */
public final class WorkerBench {
    private static final int MAX_POLL_RECORDS = 100;

    public static void main(String[] args) throws Exception {
        AvroTrust.install();
        Map<String, String> options = options(args);
        int loads = Integer.parseInt(options.getOrDefault("loads", "600"));
        int runs = Integer.parseInt(options.getOrDefault("runs", "3"));
        String modelId = options.getOrDefault("model", ModelCatalog.LLAMA_3_2_1B_Q4_K_M.id());
        try (KafkaBroker broker = KafkaFixture.start()) {
            new WorkerBench(broker, loads, runs, ModelCatalog.byId(modelId)).run();
        }
    }

    private final KafkaBroker broker;
    private final int loads;
    private final int runs;
    private final ModelCatalog.Archetype model;
    private final String input = KafkaBroker.uniqueTopic("bench-loads");
    private int tensorsPerLoad;
    private List<byte[]> templateOutputs;

    private WorkerBench(KafkaBroker broker, int loads, int runs, ModelCatalog.Archetype model) {
        this.broker = broker;
        this.loads = loads;
        this.runs = runs;
        this.model = model;
    }

    private void run() throws Exception {
        fill();
        Map<String, List<Double>> seconds = new HashMap<>();
        for (int run = 1; run <= runs; run++) {
            for (Mode mode : Mode.values()) {
                double s = measure(mode, run);
                seconds.computeIfAbsent(mode.label, k -> new ArrayList<>()).add(s);
                System.out.printf(Locale.ROOT, "run %d %-11s %6.2f s  %8.0f loads/s  %9.0f tensors/s%n", run, mode.label, s, loads / s,
                        (double) loads * tensorsPerLoad / s);
            }
        }
        report(seconds);
    }

    private void fill() throws Exception {
        broker.createTopics(3, input);
        FleetSimulator fleet = new FleetSimulator(1, loads, List.of("r1"), List.of(model), List.of(), Instant.parse("2026-11-01T00:00:00Z"));
        EventSerde<ModelLoaded> serde = EventSerde.of(ModelLoaded.class);
        Map<String, Object> config = broker.clientConfig();
        config.put(ProducerConfig.LINGER_MS_CONFIG, "10");
        config.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        config.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, Integer.toString(4 << 20));
        long bytes = 0;
        ModelLoaded first = null;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (ModelLoaded load : fleet) {
                first = first == null ? load : first;
                byte[] value = serde.encode(load);
                bytes += value.length;
                producer.send(new ProducerRecord<>(input, load.getDeployment().getId().getBytes(StandardCharsets.UTF_8), value));
            }
            producer.flush();
        }
        ResolvedLoad template = new LoadResolution(WorkerVersion.resolverVersion())
                .resolve(new LoadValidator(1_000_000).validate(first), new Provenance(input, 0, 0), Instant.now());
        tensorsPerLoad = template.decisions().size();
        EventSerde<AllocationDecided> decisions = EventSerde.of(AllocationDecided.class);
        templateOutputs = new ArrayList<>();
        template.decisions().forEach(d -> templateOutputs.add(decisions.encode(d)));
        templateOutputs.add(EventSerde.of(LoadResolved.class).encode(template.summary()));
        System.out.printf(Locale.ROOT, "input: %d loads of %s (%d tensors each, %.1f KB per record), %d decisions per mode; broker %s%n",
                loads, model.id(), tensorsPerLoad, bytes / 1024.0 / loads, (long) loads * tensorsPerLoad, broker.bootstrapServers());
    }

    /** Seconds from creating the clients to the commit that completes the input; shutdown is not counted. */
    private double measure(Mode mode, int run) throws Exception {
        String tag = mode.label + "-" + run + "-" + input;
        if (mode == Mode.WORKER) {
            return runWorker(tag);
        }
        String out = tag + ".out";
        broker.createTopics(3, out);
        return runRaw(tag, mode == Mode.PASSTHROUGH ? r -> List.of(r.value()) : r -> templateOutputs, out);
    }

    /** consume -> transform -> produce with a transaction per poll, exactly as the worker's loop does. */
    private double runRaw(String tag, Function<ConsumerRecord<byte[], byte[]>, List<byte[]>> transform, String out) {
        long started = System.nanoTime();
        Map<String, Object> consumerConfig = broker.clientConfig();
        consumerConfig.put(ConsumerConfig.GROUP_ID_CONFIG, tag);
        consumerConfig.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        consumerConfig.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        consumerConfig.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        consumerConfig.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(MAX_POLL_RECORDS));
        Map<String, Object> producerConfig = broker.clientConfig();
        producerConfig.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tag);
        producerConfig.put(ProducerConfig.LINGER_MS_CONFIG, "10");
        producerConfig.put(ProducerConfig.BATCH_SIZE_CONFIG, "131072");
        producerConfig.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        producerConfig.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, Integer.toString(4 << 20));
        int consumed = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig, new ByteArrayDeserializer(), new ByteArrayDeserializer());
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.initTransactions();
            consumer.subscribe(List.of(input));
            while (consumed < loads) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    for (byte[] value : transform.apply(record)) {
                        producer.send(new ProducerRecord<>(out, record.key(), value));
                    }
                    offsets.put(new TopicPartition(record.topic(), record.partition()), new OffsetAndMetadata(record.offset() + 1));
                    consumed++;
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
            }
            return (System.nanoTime() - started) / 1e9;
        }
    }

    /** The worker's own topic setup is done beforehand: the raw modes get their output topic for free too. */
    private double runWorker(String tag) throws InterruptedException {
        Map<String, String> settings = new HashMap<>();
        settings.put("kafka.bootstrap.servers", broker.bootstrapServers());
        settings.put("worker.input.topic", input);
        settings.put("worker.decisions.topic", tag + ".decided");
        settings.put("worker.resolved.topic", tag + ".resolved");
        settings.put("worker.dlq.topic", tag + ".dlq");
        settings.put("worker.group.id", tag);
        settings.put("worker.instance.id", tag);
        settings.put("worker.max.poll.records", Integer.toString(MAX_POLL_RECORDS));
        settings.put("worker.poll.timeout", "200ms");
        settings.put("worker.http.port", "-1");
        settings.put("kafka.max.request.size", Integer.toString(4 << 20));
        broker.createTopics(3, tag + ".decided", tag + ".resolved", tag + ".dlq");
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        long started = System.nanoTime();
        try (ResolverWorker worker = ResolverWorker.start(WorkerConfig.from(Settings.of(settings)), registry)) {
            while (registry.counter("pa.worker.loads", "outcome", "resolved").count() < loads) {
                Thread.sleep(1);
            }
            return (System.nanoTime() - started) / 1e9;
        }
    }

    private void report(Map<String, List<Double>> seconds) throws IOException {
        double passthrough = median(seconds.get(Mode.PASSTHROUGH.label));
        double fanout = median(seconds.get(Mode.FANOUT.label));
        double worker = median(seconds.get(Mode.WORKER.label));
        long decisions = (long) loads * tensorsPerLoad;
        StringBuilder md = new StringBuilder();
        md.append("# resolver-worker benchmark, ").append(LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME)).append("\n\n");
        md.append(String.format(Locale.ROOT, "%d loads of %s (%d tensors each: %d decisions), median of %d runs, %d cores, broker %s.%n%n",
                loads, model.id(), tensorsPerLoad, decisions, runs, Runtime.getRuntime().availableProcessors(),
                System.getenv("KAFKA_BOOTSTRAP_SERVERS") == null ? "in-JVM KRaft (same JVM)"
                        : System.getenv().getOrDefault("PA_BENCH_BROKER", "external " + System.getenv("KAFKA_BOOTSTRAP_SERVERS"))));
        md.append("| mode | seconds | loads/s | records out/s | worker ratio |\n|---|---|---|---|---|\n");
        md.append(row("raw EOS passthrough (1 record out per load)", passthrough, loads, loads, worker));
        md.append(row("raw EOS fan-out (worker's bytes, no resolve)", fanout, loads, decisions + loads, worker));
        md.append(row("resolver-worker", worker, loads, decisions + loads, worker));
        md.append(String.format(Locale.ROOT, "%nresolver-worker: %.0f decisions/s; vs raw fan-out of the same output %.2f; vs raw passthrough of the same input %.2f%n",
                decisions / worker, fanout / worker, passthrough / worker));
        System.out.println();
        System.out.println(md);
        Path results = Path.of("bench", "results");
        Files.createDirectories(results);
        Path file = results.resolve("worker-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + ".md");
        Files.writeString(file, md.toString());
        System.out.println("written to " + file);
    }

    private static String row(String mode, double seconds, int loads, long records, double worker) {
        return String.format(Locale.ROOT, "| %s | %.2f | %.0f | %.0f | %.2f |%n", mode, seconds, loads / seconds, records / seconds, seconds / worker);
    }

    private static double median(List<Double> values) {
        double[] sorted = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return sorted.length % 2 == 1 ? sorted[sorted.length / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --name value pairs, got " + Arrays.toString(args));
            }
            options.put(args[i].substring(2), args[i + 1]);
        }
        return options;
    }

    private enum Mode {
        PASSTHROUGH("passthrough"), FANOUT("fanout"), WORKER("worker");

        final String label;

        Mode(String label) {
            this.label = label;
        }
    }
}
