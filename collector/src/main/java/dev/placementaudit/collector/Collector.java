package dev.placementaudit.collector;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.schemas.LoadLayouts;
import dev.placementaudit.service.Health;
import dev.placementaudit.service.OpsServer;
import dev.placementaudit.service.Outage;
import dev.placementaudit.service.Sends;
import dev.placementaudit.service.TopicSetup;
import dev.placementaudit.service.cli.KafkaReachability;
import io.javalin.http.Context;
import io.micrometer.core.instrument.binder.kafka.KafkaClientMetrics;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A running collector: devices {@code POST /v1/loads} batches of loads and observations over HTTPS with their fleet's
 * token; each valid item is published to Kafka with the idempotent producer ({@code acks=all}), and the answer is a 202
 * only once the broker has acknowledged every one of them. A batch retried after a timeout publishes its items again;
 * the load id (the store keeps a load once) and the worker's decision ids (derived from it) make that harmless
 * downstream, which is what lets a device retry without knowing whether its first attempt landed.
 *
 * <p>The answers a device acts on: 202 (results per item), 422 (every item refused: retrying cannot help), 400 (not a
 * batch), 401 (no or unknown token), 403 (a deployment the token's fleet may not write; nothing published), 413 (body
 * or batch too large), 429 with {@code Retry-After} (the fleet's rate), 503 with {@code Retry-After} (the broker did not
 * acknowledge in time, or the collector is at its in-flight bound). docs/collector.md.
 */
public final class Collector implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Collector.class);
    public static final String LOADS_PATH = "/v1/loads";

    private final CollectorConfig config;
    private final Producer<String, byte[]> producer;
    private final Tokens tokens;
    private final RateLimits rates = new RateLimits(System::nanoTime);
    private final Semaphore inFlight;
    private final LoadValidator validator;
    /**
     * The layouts of loads this collector has checked, by their bytes: as many as the worker remembers, at most some 70 KB
     * each (a 1B model's, decoded). A fleet runs a handful of models under a handful of policies.
     */
    private final LoadLayouts layouts = new LoadLayouts(LoadResolution.LAYOUTS);
    private final ObjectMapper mapper = new ObjectMapper();
    private final CollectorMetrics metrics;
    private final KafkaClientMetrics clientMetrics;
    /** Until when the broker counts as unavailable (System.nanoTime), after a batch it did not acknowledge. */
    private volatile long unavailableUntil = System.nanoTime();
    private volatile Instant unavailableSince;
    /** The broker away: said when it starts and when it ends, not for every batch answered 503. */
    private final Outage outage = new Outage(LOG, "publishing fleet batches");
    private OpsServer server;

    private Collector(CollectorConfig config, Producer<String, byte[]> producer, PrometheusMeterRegistry registry, KafkaClientMetrics clientMetrics) {
        this.config = config;
        this.producer = producer;
        this.tokens = new Tokens(config.fleets());
        this.inFlight = new Semaphore(config.maxInFlight());
        this.validator = new LoadValidator(config.maxTensorsPerLoad());
        this.metrics = new CollectorMetrics(registry, () -> config.maxInFlight() - inFlight.availablePermits(), this::brokerAvailable);
        this.clientMetrics = clientMetrics;
    }

    /** @throws dev.placementaudit.service.cli.CommandFailure when no broker answers within {@code connect.timeout} */
    public static Collector start(CollectorConfig config, PrometheusMeterRegistry registry) {
        KafkaReachability.check(config.kafka(), config.connectTimeout(), List.of());
        if (config.createTopics()) {
            // The same retention the worker and the store give these topics when they make them first.
            TopicSetup.ensure(config.kafka(), config.topicPartitions(), config.topicReplication(), List.of(config.observationsTopic()),
                    List.of(config.loadsTopic()));
        }
        KafkaProducer<String, byte[]> producer = new KafkaProducer<>(producerConfig(config), new StringSerializer(), new ByteArraySerializer());
        KafkaClientMetrics clientMetrics = new KafkaClientMetrics(producer);
        clientMetrics.bindTo(registry);
        Collector collector = new Collector(config, producer, registry, clientMetrics);
        collector.server = OpsServer.start(config.http(), registry, collector::health,
                routes -> {
                    routes.routes.post(LOADS_PATH, collector::post);
                    routes.routes.get("/openapi.json", ctx -> ctx.contentType("application/json").result(OpenApi.text()));
                });
        LOG.info("collector taking {} for fleets {} at {}, publishing to {} and {}", LOADS_PATH,
                config.fleets().stream().map(Fleet::name).toList(), collector.server.url(), config.loadsTopic(), config.observationsTopic());
        return collector;
    }

    /** The producer settings the collector publishes with: a benchmark's direct producer uses the same. */
    public static Map<String, Object> producerConfigFor(CollectorConfig config) {
        return producerConfig(config);
    }

    static Map<String, Object> producerConfig(CollectorConfig config) {
        Map<String, Object> producer = new LinkedHashMap<>(config.kafka());
        producer.putIfAbsent(ProducerConfig.ACKS_CONFIG, "all");
        producer.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        producer.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 2);
        producer.putIfAbsent(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        producer.putIfAbsent(ProducerConfig.CLIENT_ID_CONFIG, "placement-collector");
        // A batch waits at most send.timeout for its acknowledgement, metadata included, then its sender gets a 503.
        long timeout = config.sendTimeout().toMillis();
        producer.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, timeout);
        producer.putIfAbsent(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) Math.max(1_000, timeout - 500));
        producer.putIfAbsent(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) Math.max(1_500, timeout));
        return producer;
    }

    private void post(Context ctx) throws Exception {
        long started = System.nanoTime();
        Optional<Fleet> fleet = tokens.fleetOf(ctx.header("Authorization"));
        if (fleet.isEmpty()) {
            ctx.header("WWW-Authenticate", "Bearer realm=\"placement-audit collector\"");
            answer(ctx, 401, "no valid token: send Authorization: Bearer <your fleet's token>", null);
            return;
        }
        Duration wait = rates.take(fleet.get());
        if (!wait.isZero()) {
            answer(ctx, 429, "fleet " + fleet.get().name() + " is over its rate of " + fleet.get().requestsPerSecond() + " requests/s", wait);
            return;
        }
        if (!brokerAvailable()) {
            answer(ctx, 503, "the broker is unavailable since " + unavailableSince + "; retry later", config.retryAfter());
            return;
        }
        if (!inFlight.tryAcquire()) {
            answer(ctx, 503, "the collector is publishing " + config.maxInFlight() + " batches already (collector.max.in.flight)", Duration.ofSeconds(1));
            return;
        }
        try {
            metrics.body(Math.max(0, ctx.contentLength()));
            String type = ctx.contentType() == null ? "" : ctx.contentType().toLowerCase(Locale.ROOT);
            Batch batch = type.startsWith(Batch.AVRO_TYPE)
                    ? Batch.readAvro(Bodies.open(ctx, config.maxBodyBytes()), config.maxItems(), validator, layouts)
                    : Batch.read(mapper, Bodies.open(ctx, config.maxBodyBytes()), config.maxItems(), validator);
            Optional<Batch.Item> forbidden = batch.forbiddenTo(fleet.get());
            if (forbidden.isPresent()) {
                answer(ctx, 403, "fleet " + fleet.get().name() + " may not write deployment '" + forbidden.get().deploymentId() + "' ("
                        + forbidden.get().kind() + "[" + forbidden.get().index() + "]); nothing in this batch was published", null);
                return;
            }
            List<Batch.Item> results = publish(batch.items());
            outage.ended();
            metrics.items(fleet.get().name(), results);
            long accepted = results.stream().filter(Batch.Item::valid).count();
            Map<String, Object> answer = new LinkedHashMap<>();
            answer.put("accepted", accepted);
            answer.put("refused", results.size() - accepted);
            answer.put("results", results.stream().map(Collector::result).toList());
            int status = accepted > 0 ? 202 : 422;
            metrics.answered(status, System.nanoTime() - started);
            ctx.status(status).json(answer);
        } catch (Bodies.TooLargeException | Batch.TooManyItemsException e) {
            answer(ctx, 413, e.getMessage(), null);
        } catch (Batch.BadBatchException | Bodies.BadBodyException e) {
            answer(ctx, 400, e.getMessage(), null);
        } catch (BrokerUnavailableException e) {
            unavailableSince = unavailableSince == null || brokerAvailable() ? Instant.now() : unavailableSince;
            unavailableUntil = System.nanoTime() + config.retryAfter().toNanos();
            outage.failed("the broker did not acknowledge a batch of fleet " + fleet.get().name() + " within " + config.sendTimeout() + ": "
                    + e.getMessage() + "; answering 503 for " + config.retryAfter());
            answer(ctx, 503, "the broker did not acknowledge the batch within " + config.sendTimeout().toMillis()
                    + " ms; nothing can be promised of it: send it again (items already published are not duplicated downstream)", config.retryAfter());
        } finally {
            inFlight.release();
        }
    }

    /** Sends every valid item and waits for the broker's acknowledgement of each; an item too large for the broker is refused. */
    private List<Batch.Item> publish(List<Batch.Item> items) throws InterruptedException {
        List<CompletableFuture<?>> sent = new ArrayList<>(items.size());
        for (Batch.Item item : items) {
            if (!item.valid()) {
                sent.add(CompletableFuture.completedFuture(null));
                continue;
            }
            boolean load = item.kind().equals(Batch.LOADS);
            CompletableFuture<?> acknowledged = Sends.acknowledged(producer, () -> new ProducerRecord<>(
                    load ? config.loadsTopic() : config.observationsTopic(), item.deploymentId(), item.encoded()));
            if (acknowledged.handle((ok, failure) -> failure).getNow(null) instanceof org.apache.kafka.common.errors.TimeoutException e) {
                // No metadata within max.block.ms (send() waited, then failed the record): every later item would wait as long
                // again, for the same answer.
                throw new BrokerUnavailableException(e.getMessage());
            }
            sent.add(acknowledged);
        }
        long deadline = System.nanoTime() + config.sendTimeout().toNanos();
        List<Batch.Item> results = new ArrayList<>(items.size());
        for (int i = 0; i < items.size(); i++) {
            try {
                sent.get(i).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                results.add(items.get(i));
            } catch (ExecutionException e) {
                if (e.getCause() instanceof RecordTooLargeException) {
                    results.add(items.get(i).refused("TOO_LARGE", "", "the encoded event is larger than the broker takes ("
                            + e.getCause().getMessage() + ")"));
                } else {
                    throw new BrokerUnavailableException(e.getCause().toString());
                }
            } catch (TimeoutException e) {
                throw new BrokerUnavailableException("no acknowledgement in time");
            }
        }
        return results;
    }

    private static Map<String, Object> result(Batch.Item item) {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("kind", item.kind());
        result.put("index", item.index());
        result.put("id", item.id());
        result.put("status", item.valid() ? "accepted" : "refused");
        if (!item.valid()) {
            result.put("code", item.code());
            result.put("field", item.field());
            result.put("reason", item.reason());
        }
        return result;
    }

    private void answer(Context ctx, int status, String error, Duration retryAfter) {
        if (retryAfter != null) {
            ctx.header("Retry-After", String.valueOf(Math.max(1, (retryAfter.toMillis() + 999) / 1000)));
        }
        metrics.answered(status, 0);
        ctx.status(status).json(Map.of("error", error));
    }

    boolean brokerAvailable() {
        return System.nanoTime() - unavailableUntil >= 0;
    }

    private Health health() {
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("fleets", config.fleets().size());
        details.put("inFlight", config.maxInFlight() - inFlight.availablePermits());
        if (brokerAvailable()) {
            return Health.up(details);
        }
        details.put("broker", "unavailable since " + unavailableSince);
        return Health.down(details);
    }

    public CollectorConfig config() {
        return config;
    }

    public String url() {
        return server.url();
    }

    public int port() {
        return server.port();
    }

    @Override
    public void close() {
        if (server != null) {
            server.close();
        }
        producer.close(Duration.ofSeconds(5));
        clientMetrics.close();
    }

    private static final class BrokerUnavailableException extends RuntimeException {
        BrokerUnavailableException(String message) {
            super(message);
        }
    }
}
