package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.Settings;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.Runbook;
import dev.placementaudit.testkit.TopicReader;
import dev.placementaudit.worker.WorkerConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

/** One test's topics on the shared broker, and the ways a test feeds and reads them. */
final class WorkerHarness {
    static final EventSerde<ModelLoaded> LOADS = EventSerde.of(ModelLoaded.class);
    static final EventSerde<AllocationDecided> DECISIONS = EventSerde.of(AllocationDecided.class);
    static final EventSerde<LoadResolved> RESOLVED = EventSerde.of(LoadResolved.class);

    final KafkaBroker broker;
    final String input;
    final String decisions;
    final String resolved;
    final String deadLetters;
    final String group;

    WorkerHarness(KafkaBroker broker, int inputPartitions) {
        this.broker = broker;
        this.input = KafkaBroker.uniqueTopic("loads");
        this.decisions = input + ".decided";
        this.resolved = input + ".resolved";
        this.deadLetters = input + ".dlq";
        this.group = "resolver-" + input;
        broker.createTopics(inputPartitions, input);
    }

    Map<String, String> settings(String instanceId) {
        Map<String, String> settings = new HashMap<>();
        settings.put("kafka.bootstrap.servers", broker.bootstrapServers());
        settings.put("worker.input.topic", input);
        settings.put("worker.decisions.topic", decisions);
        settings.put("worker.resolved.topic", resolved);
        settings.put("worker.dlq.topic", deadLetters);
        settings.put("worker.group.id", group);
        settings.put("worker.instance.id", instanceId);
        settings.put("worker.transactional.id.prefix", "tx-" + input);
        settings.put("worker.poll.timeout", "200ms");
        settings.put("worker.http.port", "-1");
        return settings;
    }

    ResolverWorker start(Map<String, String> settings) {
        return start(settings, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
    }

    ResolverWorker start(Map<String, String> settings, PrometheusMeterRegistry registry) {
        return ResolverWorker.start(WorkerConfig.from(Settings.of(settings)), registry);
    }

    ResolverWorker start(String instanceId) {
        return start(settings(instanceId));
    }

    /** Sends raw values keyed by deployment (or by "poison"), returning where each landed. */
    List<RecordMetadata> sendRaw(List<byte[]> values) throws Exception {
        Map<String, Object> config = broker.clientConfig();
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        config.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 4 * 1024 * 1024);
        List<RecordMetadata> written = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (byte[] value : values) {
                byte[] key = "poison".getBytes(StandardCharsets.UTF_8);
                written.add(producer.send(new ProducerRecord<>(input, key, value)).get(10, TimeUnit.SECONDS));
            }
        }
        return written;
    }

    List<RecordMetadata> send(List<ModelLoaded> loads) throws Exception {
        Map<String, Object> config = broker.clientConfig();
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        List<RecordMetadata> written = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (ModelLoaded load : loads) {
                byte[] key = load.getDeployment().getId().getBytes(StandardCharsets.UTF_8);
                written.add(producer.send(new ProducerRecord<>(input, key, LOADS.encode(load))).get(10, TimeUnit.SECONDS));
            }
        }
        return written;
    }

    /** A transactional producer batching and compressing as the worker's do, its transactions initialised. */
    static KafkaProducer<byte[], byte[]> transactionalProducer(KafkaBroker broker, String transactionalId) {
        Map<String, Object> config = broker.clientConfig();
        config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        config.put(ProducerConfig.LINGER_MS_CONFIG, 10);
        config.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
        producer.initTransactions();
        return producer;
    }

    /** Per partition of {@code topic}, the producers with a transaction open there (id, epoch, first offset), as the broker says now. */
    String openTransactions(String topic) {
        try (Admin admin = Admin.create(broker.clientConfig())) {
            int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic).partitions().size();
            List<TopicPartition> all = IntStream.range(0, partitions).mapToObj(p -> new TopicPartition(topic, p)).toList();
            Map<TopicPartition, String> open = new TreeMap<>(Comparator.comparingInt(TopicPartition::partition));
            admin.describeProducers(all).all().get(10, TimeUnit.SECONDS).forEach((partition, state) -> open.put(partition, state.activeProducers().stream()
                    .filter(p -> p.currentTransactionStartOffset().isPresent())
                    .map(p -> "pid " + p.producerId() + " epoch " + p.producerEpoch() + " from " + p.currentTransactionStartOffset().getAsLong())
                    .toList().toString()));
            return open.toString();
        } catch (Exception e) {
            return "(could not ask: " + e + ")";
        }
    }

    /**
     * What the runbook "A transaction left hanging" has an operator do (docs/operations.md), done by Admin instead of
     * {@code kafka-transactions.sh}: for each output partition the worker's /health names as hanging, abort the
     * transaction open there. Returns the partitions aborted on, with the producer that held them.
     */
    List<String> abortHanging(List<String> problems) {
        return Runbook.abortHanging(broker, List.of(decisions, resolved, deadLetters, "__consumer_offsets"), String.join("\n", problems));
    }

    List<AllocationDecided> decisions(int atLeast) {
        return TopicReader.readCommitted(broker, decisions, atLeast, Duration.ofSeconds(90), Duration.ofSeconds(1))
                .stream().map(r -> DECISIONS.decode(r.value())).toList();
    }

    List<LoadResolved> resolved(int atLeast) {
        return resolvedRecords(atLeast).stream().map(r -> RESOLVED.decode(r.value())).toList();
    }

    /** The load-resolved topic as a read_committed consumer sees it, records and where they are. */
    List<ConsumerRecord<byte[], byte[]>> resolvedRecords(int atLeast) {
        return TopicReader.readCommitted(broker, resolved, atLeast, Duration.ofSeconds(90), Duration.ofSeconds(1));
    }

    List<ConsumerRecord<byte[], byte[]>> deadLetters(int atLeast) {
        return TopicReader.readCommitted(broker, deadLetters, atLeast, Duration.ofSeconds(90), Duration.ofSeconds(1));
    }

    static String header(ConsumerRecord<byte[], byte[]> record, String key) {
        var header = record.headers().lastHeader(key);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }
}
