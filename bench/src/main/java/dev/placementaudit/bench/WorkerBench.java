package dev.placementaudit.bench;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.simulate.FleetSimulator;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.resolution.Provenance;
import dev.placementaudit.resolution.ResolvedLoad;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.PhaseTimers;
import dev.placementaudit.service.Settings;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaFixture;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.WorkerVersion;
import dev.placementaudit.worker.pipeline.ResolverWorker;
import dev.placementaudit.worker.pipeline.WorkerMetrics.Phase;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
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
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.ToDoubleBiFunction;
import java.util.function.ToDoubleFunction;

/**
 * Resolver-worker throughput against two raw Kafka baselines, in one run, on one broker, with the same client
 * settings (max.poll.records, linger, batch size, lz4, acks=all, EOS v2 transactions per poll):
 * <ul>
 *   <li><b>passthrough</b>: copy each ModelLoaded record to an output topic, exactly once;</li>
 *   <li><b>fan-out</b>: for each ModelLoaded, write the worker's real output bytes (one pre-encoded decision per
 *       tensor and a summary, taken from resolving one load beforehand), exactly once, to the worker's two topics
 *       (decisions to one, the summary to the other, so a transaction spans the same partitions as the worker's)
 *       - everything the worker does except decode, validate, resolve and encode;</li>
 *   <li><b>worker</b>: the real ResolverWorker.</li>
 * </ul>
 * Each mode starts its own consumer group from offset 0 of the same pre-filled input topic; time is measured from
 * client start to the last commit, so group join costs all three the same. Modes alternate within each round, and
 * the first {@code --warmup} rounds are not counted: the first round runs cold code (the worker's took 1.7 times
 * as long as later ones). Every other counted round runs the modes in reverse order, and each mode's output topics
 * are deleted once it is measured, so that no mode is timed while the kernel writes back the one before it. Each
 * mode's CPU seconds, in this JVM and in the broker's process, are reported beside its time, because on a shared
 * 2-core machine they tell a mode that waited on round trips from one that ran out of cores.
 * {@code --ahead 0,1,2} runs the worker once per {@code worker.batches.ahead} value in each round, for an A/B of the
 * look-ahead under the same conditions; by default it runs once, with the worker's default. {@code --threads 1,2}
 * does the same for {@code worker.resolve.threads}, {@code --overlap true,false} for {@code worker.commit.overlap}, and {@code --reconcile 0s,2m} for {@code worker.reconcile.after}
 * (every combination of the lists is a variant). Beside the ratio of the
 * medians, the report gives each round's ratio (modes of a round run back to back) and their median, and where each
 * mode's loop thread spent its time: the raw modes' timed here, the worker's from its {@code pa.worker.batch.phase} timers.
 */
public final class WorkerBench {
    private static final int MAX_POLL_RECORDS = 100;
    /** After a mode's outputs are deleted, before the next mode starts: the broker removes their files meanwhile. */
    private static final long SETTLE_MILLIS = 2_000;

    public static void main(String[] args) throws Exception {
        AvroTrust.install();
        BenchOptions options = new BenchOptions(args);
        try (KafkaBroker broker = KafkaFixture.start()) {
            new WorkerBench(broker, options).run();
        }
    }

    /** Every topic's replicas: 3 against the three-node cluster ({@code BENCH_CLUSTER=3}), 1 on one broker. */
    private static final short REPLICATION = Short.parseShort(System.getenv().getOrDefault("PA_BENCH_REPLICATION", "1"));

    private static final Variant PASSTHROUGH = new Variant(Mode.PASSTHROUGH, "", "", "", "");
    private static final Variant FANOUT = new Variant(Mode.FANOUT, "", "", "", "");

    private final KafkaBroker broker;
    private final int loads;
    private final int runs;
    private final int warmup;
    private final ModelCatalog.Archetype model;
    /** The worker variants run each round: each worker.batches.ahead value ("" for the worker's default) ... */
    private final List<String> aheadValues;
    /** ... with each worker.resolve.threads value ("" for the worker's default). */
    private final List<String> threadValues;
    /** ... and each worker.commit.overlap value ("" for the worker's default). */
    private final List<String> overlapValues;
    /** ... and each {@code worker.reconcile.after} value ("" for its default; 0s turns the reconciler off), to measure its cost. */
    private final List<String> reconcileValues;
    private final CpuClock cpu = CpuClock.fromEnvironment();
    private final String input = KafkaBroker.uniqueTopic("bench-loads");
    private int tensorsPerLoad;
    private List<byte[]> templateOutputs;

    private WorkerBench(KafkaBroker broker, BenchOptions options) {
        this.broker = broker;
        // 180,000 loads (26.3 million decisions): some 30 s of the raw fan-out's work per mode here, so start-up and group
        // join (about 0.4 s, reported apart) weigh ~1%, and the steady-state figures leave them out altogether.
        this.loads = options.integer("loads", 180_000);
        this.runs = options.integer("runs", 3);
        this.warmup = options.integer("warmup", 1);
        this.model = ModelCatalog.byId(options.text("model", ModelCatalog.LLAMA_3_2_1B_Q4_K_M.id()));
        this.aheadValues = options.list("ahead");
        this.threadValues = options.list("threads");
        this.overlapValues = options.list("overlap");
        this.reconcileValues = options.list("reconcile");
    }

    /** Every mode of a round, in the order they run: the raw baselines, then each worker variant. */
    private List<Variant> variants() {
        List<Variant> variants = new ArrayList<>(List.of(PASSTHROUGH, FANOUT));
        for (String reconcile : reconcileValues) {
            for (String overlap : overlapValues) {
                for (String threads : threadValues) {
                    aheadValues.forEach(ahead -> variants.add(new Variant(Mode.WORKER, ahead, threads, overlap, reconcile)));
                }
            }
        }
        return variants;
    }

    private void run() throws Exception {
        fill();
        for (int round = 1; round <= warmup; round++) {
            for (Variant variant : variants()) {
                print("warm-up " + round, variant, measure(variant, "warmup" + round));
            }
        }
        Map<Variant, List<Sample>> samples = new LinkedHashMap<>();
        for (int run = 1; run <= runs; run++) {
            // Every other round runs its modes in reverse, so a machine that slows down or speeds up across a round does
            // not always favour the same mode (the ratio is taken within each round).
            List<Variant> order = variants();
            if (run % 2 == 0) {
                Collections.reverse(order);
            }
            for (Variant variant : order) {
                Sample sample = measure(variant, "run" + run);
                samples.computeIfAbsent(variant, k -> new ArrayList<>()).add(sample);
                print("run " + run, variant, sample);
            }
        }
        report(samples);
    }

    private void print(String round, Variant variant, Sample sample) {
        System.out.printf(Locale.ROOT, "%-9s %-14s %6.2f s (first commit %4.2f s, steady %6.2f s)  %8.0f loads/s  %9.0f tensors/s steady  "
                        + "cpu client %5.2f s broker %5.2f s; loop: %s%n", round, variant.label(), sample.seconds, sample.firstCommit, sample.steady(),
                loads / sample.seconds, (double) loads * tensorsPerLoad / sample.steady(), sample.cpu.clientSeconds(), sample.cpu.brokerSeconds(),
                sample.loop);
    }

    private void fill() throws Exception {
        try (Admin admin = Admin.create(broker.clientConfig())) {
            admin.createTopics(List.of(new NewTopic(input, 3, REPLICATION))).all().get(30, TimeUnit.SECONDS);
        }
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
        tensorsPerLoad = template.encodedDecisions().size();
        templateOutputs = new ArrayList<>(template.encodedDecisions());
        templateOutputs.add(EventSerde.of(LoadResolved.class).encode(template.summary()));
        System.out.printf(Locale.ROOT, "input: %d loads of %s (%d tensors each, %.1f KB per record), %d decisions per mode; broker %s%n",
                loads, model.id(), tensorsPerLoad, bytes / 1024.0 / loads, (long) loads * tensorsPerLoad, broker.bootstrapServers());
    }

    /** From creating the clients to the commit that completes the input; shutdown is not counted. */
    private Sample measure(Variant variant, String round) throws Exception {
        String tag = variant.label() + "-" + round + "-" + input;
        if (variant.mode == Mode.WORKER) {
            return runWorker(tag, variant);
        }
        String out = tag + ".out";
        if (variant.mode == Mode.PASSTHROUGH) {
            createOutputs(out);
            try {
                return runRaw(tag, r -> passthrough(out, r));
            } finally {
                dropOutputs(out);
            }
        }
        // The worker's two output topics, as it uses them: the decisions to one, the load's summary to the other.
        String decided = tag + ".decided";
        String resolved = tag + ".resolved";
        createOutputs(decided, resolved);
        try {
            return runRaw(tag, r -> fanOut(decided, resolved, r));
        } finally {
            dropOutputs(decided, resolved);
        }
    }

    /**
     * A mode's output topics, whose segments the broker deletes at once when the topic is deleted
     * ({@code file.delete.delay.ms=0}), instead of a minute later.
     */
    private void createOutputs(String... names) throws Exception {
        try (Admin admin = Admin.create(broker.clientConfig())) {
            admin.createTopics(Arrays.stream(names).map(name -> new NewTopic(name, 3, REPLICATION)
                    .configs(Map.of(TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, "0"))).toList()).all().get(30, TimeUnit.SECONDS);
        }
    }

    /**
     * Deletes a mode's output once it is measured, and gives the broker a moment to remove its files. A 60,000-load
     * run held 2.5 GB on the broker after its warm-up round, input included, so the default 180,000 loads write some
     * 3 GB a mode a round: kept, the whole run's outputs outgrow this machine's memory, and the kernel writes back the
     * last mode's pages while the next mode is timed. Kept, they slowed the fan-out more than the worker
     * (docs/benchmarks.md: 0.85 of it then, 0.78 with them deleted, the same hour, 60,000 loads).
     */
    private void dropOutputs(String... names) throws Exception {
        try (Admin admin = Admin.create(broker.clientConfig())) {
            admin.deleteTopics(List.of(names)).all().get(60, TimeUnit.SECONDS);
        }
        Thread.sleep(SETTLE_MILLIS);
    }

    private static List<ProducerRecord<byte[], byte[]>> passthrough(String out, ConsumerRecord<byte[], byte[]> record) {
        return List.of(new ProducerRecord<>(out, record.key(), record.value()));
    }

    private List<ProducerRecord<byte[], byte[]>> fanOut(String decided, String resolved, ConsumerRecord<byte[], byte[]> record) {
        List<ProducerRecord<byte[], byte[]>> outputs = new ArrayList<>(templateOutputs.size());
        for (int i = 0; i < templateOutputs.size() - 1; i++) {
            outputs.add(new ProducerRecord<>(decided, record.key(), templateOutputs.get(i)));
        }
        outputs.add(new ProducerRecord<>(resolved, record.key(), templateOutputs.get(templateOutputs.size() - 1)));
        return outputs;
    }

    /** consume -> transform -> produce with a transaction per poll, exactly as the worker's loop does. */
    private Sample runRaw(String tag, Function<ConsumerRecord<byte[], byte[]>, List<ProducerRecord<byte[], byte[]>>> transform) {
        Stopwatch watch = new Stopwatch();
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
        int transactions = 0;
        long polling = 0;
        long sending = 0;
        long committing = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig, new ByteArrayDeserializer(), new ByteArrayDeserializer());
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.initTransactions();
            consumer.subscribe(List.of(input));
            while (consumed < loads) {
                long asked = System.nanoTime();
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                long polled = System.nanoTime();
                if (records.isEmpty()) {
                    continue;
                }
                polling += polled - asked;
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    for (ProducerRecord<byte[], byte[]> output : transform.apply(record)) {
                        producer.send(output);
                    }
                    offsets.put(new TopicPartition(record.topic(), record.partition()), new OffsetAndMetadata(record.offset() + 1));
                    consumed++;
                }
                long sent = System.nanoTime();
                sending += sent - polled;
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
                committing += System.nanoTime() - sent;
                watch.committed();
                transactions++;
            }
            Sample sample = watch.stop(new LoopTime(0, sending / 1e9, polling / 1e9, committing / 1e9));
            System.out.printf(Locale.ROOT, "  %s: %d transactions%n", tag, transactions);
            return sample;
        }
    }

    /** The worker's own topic setup is done beforehand: the raw modes get their output topic for free too. */
    private Sample runWorker(String tag, Variant variant) throws Exception {
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
        // Its topics are created below, before the clock starts, as the raw modes' are: no admin round trips timed.
        settings.put("worker.topics.create", "false");
        settings.put("kafka.max.request.size", Integer.toString(4 << 20));
        if (!variant.ahead.isEmpty()) {
            settings.put("worker.batches.ahead", variant.ahead);
        }
        if (!variant.threads.isEmpty()) {
            settings.put("worker.resolve.threads", variant.threads);
        }
        if (!variant.overlap.isEmpty()) {
            settings.put("worker.commit.overlap", variant.overlap);
        }
        if (!variant.reconcile.isEmpty()) {
            settings.put("worker.reconcile.after", variant.reconcile);
        }
        createOutputs(tag + ".decided", tag + ".resolved", tag + ".dlq");
        try {
            return timeWorker(tag, settings);
        } finally {
            dropOutputs(tag + ".decided", tag + ".resolved", tag + ".dlq");
        }
    }

    private Sample timeWorker(String tag, Map<String, String> settings) throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        Stopwatch watch = new Stopwatch();
        try (ResolverWorker worker = ResolverWorker.start(WorkerConfig.from(Settings.of(settings)), registry)) {
            while (registry.counter("pa.worker.loads", "outcome", "resolved").count() < loads) {
                if (registry.timer("pa.worker.batch").count() > 0) {
                    watch.committed();
                }
                Thread.sleep(1);
            }
            Sample sample = watch.stop(LoopTime.of(registry));
            System.out.printf(Locale.ROOT, "  %s: %d transactions%n", tag, registry.timer("pa.worker.batch").count());
            return sample;
        }
    }

    private void report(Map<Variant, List<Sample>> samples) throws IOException {
        Map<Variant, Sample> median = new LinkedHashMap<>();
        samples.forEach((variant, list) -> median.put(variant, Sample.median(list)));
        Sample passthrough = median.get(PASSTHROUGH);
        Sample fanout = median.get(FANOUT);
        List<Variant> workers = median.keySet().stream().filter(v -> v.mode == Mode.WORKER).toList();
        long decisions = (long) loads * tensorsPerLoad;
        StringBuilder md = new StringBuilder();
        md.append("# resolver-worker benchmark, ").append(LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME)).append("\n\n");
        md.append(String.format(Locale.ROOT, "%d loads of %s (%d tensors each: %d decisions), median of %d runs after %d warm-up round(s), %d cores, broker %s.%n%n",
                loads, model.id(), tensorsPerLoad, decisions, runs, warmup, Runtime.getRuntime().availableProcessors(),
                System.getenv("KAFKA_BOOTSTRAP_SERVERS") == null ? "in-JVM KRaft (same JVM)"
                        : System.getenv().getOrDefault("PA_BENCH_BROKER", "external " + System.getenv("KAFKA_BOOTSTRAP_SERVERS"))));
        md.append("| mode | seconds | loads/s | records out/s | CPU s, client | CPU s, broker | cores busy | vs fan-out | vs passthrough |\n"
                + "|---|---|---|---|---|---|---|---|---|\n");
        md.append(row("raw EOS passthrough (1 record out per load)", passthrough, loads, fanout, passthrough));
        md.append(row("raw EOS fan-out (worker's bytes, no resolve)", fanout, decisions + loads, fanout, passthrough));
        for (Variant variant : workers) {
            md.append(row("resolver-worker" + (variant.ahead.isEmpty() ? "" : ", batches.ahead=" + variant.ahead)
                            + (variant.threads.isEmpty() ? "" : ", resolve.threads=" + variant.threads)
                            + (variant.overlap.isEmpty() ? "" : ", commit.overlap=" + variant.overlap)
                            + (variant.reconcile.isEmpty() ? "" : ", reconcile.after=" + variant.reconcile), median.get(variant),
                    decisions + loads, fanout, passthrough));
        }
        md.append('\n');
        for (Variant variant : workers) {
            Sample sample = median.get(variant);
            md.append(String.format(Locale.ROOT, "%s, **steady state** (from each mode's first commit to its last; start-up and group "
                            + "join left out): %.0f decisions/s; vs raw fan-out round by round %s (**median %.2f**)%n",
                    variant.label(), decisions / sample.steady(), formatted(pairedSteadyRatios(samples.get(FANOUT), samples.get(variant)), "%.2f"),
                    median(pairedSteadyRatios(samples.get(FANOUT), samples.get(variant)))));
            List<Double> extra = pairedExtraClientCpu(samples.get(FANOUT), samples.get(variant));
            md.append(String.format(Locale.ROOT, "%s, client CPU a load beyond the fan-out's (what resolving adds to the same sends), "
                    + "round by round %s us (**median %.1f us**)%n", variant.label(), formatted(extra, "%.1f"), median(extra)));
            md.append(String.format(Locale.ROOT, "%s, start to last commit: %.0f decisions/s; vs raw fan-out of the same output %.2f; vs raw passthrough of the same input %.2f; "
                            + "CPU per decision (client + broker) %.2f us (fan-out %.2f us); "
                            + "round by round, vs fan-out %s (median %.2f), vs passthrough median %.2f%n",
                    variant.label(), decisions / sample.seconds, fanout.seconds / sample.seconds, passthrough.seconds / sample.seconds,
                    sample.cpuMicrosPer(decisions), fanout.cpuMicrosPer(decisions),
                    formatted(pairedRatios(samples.get(FANOUT), samples.get(variant)), "%.2f"),
                    median(pairedRatios(samples.get(FANOUT), samples.get(variant))),
                    median(pairedRatios(samples.get(PASSTHROUGH), samples.get(variant)))));
        }
        md.append("\nThe loop thread's time by phase, seconds of the median round (the worker's from its `pa_worker_batch_phase_seconds`; "
                + "the raw modes poll before each batch, the worker polls the next batch while this one's are in flight; "
                + "resolving: waiting for the preparing threads; committing: the producer's flush and the coordinator's round trips):\n\n"
                + "| mode | resolving | sending | polling | committing | the round |\n|---|---|---|---|---|---|\n");
        median.forEach((variant, sample) -> md.append(String.format(Locale.ROOT, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f |%n", variant.label(),
                sample.loop.resolving(), sample.loop.sending(), sample.loop.polling(), sample.loop.committing(), sample.seconds)));
        md.append("\nEvery round (seconds): ");
        samples.forEach((variant, list) -> md.append(variant.label()).append(' ')
                .append(list.stream().map(x -> String.format(Locale.ROOT, "%.2f", x.seconds)).toList()).append("; "));
        md.append("\nSeconds to the first commit (start-up, group join, first batch; reported apart from the steady state): ");
        samples.forEach((variant, list) -> md.append(variant.label()).append(' ')
                .append(list.stream().map(x -> String.format(Locale.ROOT, "%.2f", x.firstCommit)).toList()).append("; "));
        md.append('\n');
        System.out.println();
        System.out.println(md);
        Path results = Path.of("bench", "results");
        Files.createDirectories(results);
        Path file = results.resolve("worker-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + ".md");
        Files.writeString(file, md.toString());
        System.out.println("written to " + file);
    }

    /**
     * Baseline seconds / variant seconds for each round. The modes of a round run back to back, so a round that the
     * machine made slow (a JIT burst, the broker's own warm-up, another process) is slow for both, and the median of
     * these paired ratios moves less than the ratio of two medians taken apart.
     */
    private static List<Double> pairedRatios(List<Sample> baseline, List<Sample> variant) {
        return paired(baseline, variant, (b, v) -> b.seconds / v.seconds);
    }

    /** The same over the steady part of each run: from its first commit to its last. */
    private static List<Double> pairedSteadyRatios(List<Sample> baseline, List<Sample> variant) {
        return paired(baseline, variant, (b, v) -> b.steady() / v.steady());
    }

    /** Round by round, this JVM's CPU a load beyond the baseline's, in microseconds: what the variant adds to the same sends. */
    private List<Double> pairedExtraClientCpu(List<Sample> baseline, List<Sample> variant) {
        return paired(baseline, variant, (b, v) -> (v.cpu.clientSeconds() - b.cpu.clientSeconds()) * 1e6 / loads);
    }

    /** A figure of each round's baseline and variant, round by round. */
    private static List<Double> paired(List<Sample> baseline, List<Sample> variant, ToDoubleBiFunction<Sample, Sample> figure) {
        List<Double> figures = new ArrayList<>(variant.size());
        for (int i = 0; i < variant.size(); i++) {
            figures.add(figure.applyAsDouble(baseline.get(i), variant.get(i)));
        }
        return figures;
    }

    private static List<String> formatted(List<Double> values, String format) {
        return values.stream().map(v -> String.format(Locale.ROOT, format, v)).toList();
    }

    private static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    /** One mode's median run; the ratios are throughput relative to each baseline (baseline seconds / these). */
    private String row(String mode, Sample sample, long records, Sample fanout, Sample passthrough) {
        return String.format(Locale.ROOT, "| %s | %.2f | %.0f | %.0f | %.2f | %s | %s | %.2f | %.2f |%n", mode, sample.seconds, loads / sample.seconds,
                records / sample.seconds, sample.cpu.clientSeconds(),
                cpu.seesBroker() ? String.format(Locale.ROOT, "%.2f", sample.cpu.brokerSeconds()) : "n/a",
                cpu.seesBroker() ? String.format(Locale.ROOT, "%.2f", sample.coresBusy()) : "n/a",
                fanout.seconds / sample.seconds, passthrough.seconds / sample.seconds);
    }

    /** Starts counting wall time and CPU at once; stopped at the same point both are read. */
    private final class Stopwatch {
        private final long startedNanos = System.nanoTime();
        private final CpuClock.Reading startedCpu = cpu.read();
        private long firstCommitNanos;

        /** Marks the first commit (later calls change nothing): what came before it was start-up and group join. */
        void committed() {
            if (firstCommitNanos == 0) {
                firstCommitNanos = System.nanoTime();
            }
        }

        Sample stop(LoopTime loop) {
            long now = System.nanoTime();
            return new Sample((now - startedNanos) / 1e9, (firstCommitNanos - startedNanos) / 1e9, cpu.read().since(startedCpu), loop);
        }
    }

    /** @param firstCommit seconds from the start to the first commit (clients created, group joined, one batch) */
    private record Sample(double seconds, double firstCommit, CpuClock.Reading cpu, LoopTime loop) {
        /** The run with the median time, with its own CPU figures (not medians taken column by column). */
        static Sample median(List<Sample> samples) {
            List<Sample> sorted = samples.stream().sorted(Comparator.comparingDouble(Sample::seconds)).toList();
            return sorted.get((sorted.size() - 1) / 2);
        }

        /**
         * Seconds from the first commit to the last: the run without its start-up and group join. The first
         * transaction's records (one poll, at most 100 loads) are inside the first commit, so a rate over this counts
         * them as if done in steady state: 0.06% of the default 180,000 loads.
         */
        double steady() {
            return seconds - firstCommit;
        }

        double coresBusy() {
            return (cpu.clientSeconds() + cpu.brokerSeconds()) / seconds;
        }

        double cpuMicrosPer(long decisions) {
            return (cpu.clientSeconds() + (Double.isNaN(cpu.brokerSeconds()) ? 0 : cpu.brokerSeconds())) * 1e6 / decisions;
        }
    }

    /** Seconds a mode's loop thread spent in each phase of its batches, over a run (see WorkerMetrics.Phase). */
    private record LoopTime(double resolving, double sending, double polling, double committing) {
        /** The worker's own timers, over the run that filled this registry. */
        static LoopTime of(PrometheusMeterRegistry registry) {
            ToDoubleFunction<Phase> seconds = phase -> registry.get("pa.worker.batch.phase").tag("phase", PhaseTimers.label(phase)).timer()
                    .totalTime(TimeUnit.SECONDS);
            return new LoopTime(seconds.applyAsDouble(Phase.RESOLVING), seconds.applyAsDouble(Phase.SENDING),
                    seconds.applyAsDouble(Phase.POLLING), seconds.applyAsDouble(Phase.COMMITTING));
        }

        @Override
        public String toString() {
            return String.format(Locale.ROOT, "resolving %.2f, sending %.2f, polling %.2f, committing %.2f s", resolving, sending, polling, committing);
        }
    }

    private enum Mode {
        PASSTHROUGH("passthrough"), FANOUT("fanout"), WORKER("worker");

        final String label;

        Mode(String label) {
            this.label = label;
        }
    }

    /**
     * A mode, and for the worker the worker.batches.ahead, worker.resolve.threads, worker.commit.overlap and
     * worker.reconcile.after it runs with ("" for its defaults).
     */
    private record Variant(Mode mode, String ahead, String threads, String overlap, String reconcile) {
        String label() {
            return mode.label + (ahead.isEmpty() ? "" : "-ahead" + ahead) + (threads.isEmpty() ? "" : "-threads" + threads)
                    + (overlap.isEmpty() ? "" : "-overlap-" + overlap) + (reconcile.isEmpty() ? "" : "-reconcile-" + reconcile);
        }
    }
}
