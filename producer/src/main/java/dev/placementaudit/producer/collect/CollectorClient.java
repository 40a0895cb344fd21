package dev.placementaudit.producer.collect;

import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import org.apache.avro.specific.SpecificRecord;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;

import javax.net.ssl.SSLContext;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;

/**
 * What a runtime embeds to report its loads and observations to a collector over HTTPS, from Java or Kotlin, without
 * Kafka credentials (docs/collector.md):
 * <pre>{@code
 * CollectorClient client = CollectorClient.builder(URI.create("https://collector.example:8083"), token)
 *         .spool(Path.of("/data/placement-spool"), 64L << 20).build();
 * CollectorClient.Delivery delivery = client.send(List.of(load), List.of(observation));
 * }</pre>
 * Items go in gzip batches of {@code batchSize}, Avro by default ({@link Format}). A batch is retried a bounded number of times with jittered exponential
 * backoff, waiting at least what a 429 or 503 says in {@code Retry-After}; one that still cannot be delivered (the device
 * is offline, the broker is down) is kept in the spool, and every later batch queues behind it, so the collector sees them
 * in order once it is reachable ({@link #drain()}, and every {@link #send}). Sending a batch again is safe: the load id
 * makes a retried load land once downstream.
 *
 * <p>Nothing is dropped silently: refused items come back in the {@link Delivery}; a refusal of the whole batch (401, 403,
 * 413) is a {@link CollectorException}; a full spool is a {@link Spool.SpoolFullException} and
 * {@code pa_collector_client_spool_full_total}.
 */
public final class CollectorClient {
    private final URI endpoint;
    private final String token;
    private final HttpClient http;
    private final int batchSize;
    private final int maxAttempts;
    private final Duration backoff;
    private final Duration maxBackoff;
    private final Duration requestTimeout;
    private final Spool spool;
    private final Format format;
    private final Sleeper sleeper;
    private final Counter sent;
    private final Counter spooled;
    private final Counter spoolFull;
    private final Counter refusedBatches;

    /**
     * How batches are written: {@link #AVRO} (the default: the events' Avro single-object encoding, framed; the collector
     * publishes them as sent, the cheap path at both ends) or {@link #JSON} (what a browser sends; easier to read on the wire).
     */
    public enum Format {
        AVRO("application/vnd.placement-audit.batch+avro", ".avro.gz"),
        JSON("application/json", ".json.gz");

        final String contentType;
        final String suffix;

        Format(String contentType, String suffix) {
            this.contentType = contentType;
            this.suffix = suffix;
        }
    }

    /** Waits between attempts; a test passes one that records instead of sleeping. */
    @FunctionalInterface
    public interface Sleeper {
        void sleep(Duration duration) throws InterruptedException;
    }

    /** One refused item: which, and the collector's reason (the worker's validation code, or MALFORMED, UNSTORABLE, TOO_LARGE). */
    public record Refusal(String kind, int index, String id, String code, String field, String reason) {
    }

    /**
     * What became of a {@link #send}: items the broker acknowledged, items refused (with why), items kept in the spool for
     * later, and spooled batches from before that were delivered on the way.
     */
    public record Delivery(int accepted, List<Refusal> refused, int spooled, int drainedBatches) {
        public Delivery {
            refused = List.copyOf(refused);
        }

        Delivery plus(Delivery other) {
            List<Refusal> all = new ArrayList<>(refused);
            all.addAll(other.refused);
            return new Delivery(accepted + other.accepted, all, spooled + other.spooled, drainedBatches + other.drainedBatches);
        }

        static final Delivery NONE = new Delivery(0, List.of(), 0, 0);
    }

    private CollectorClient(Builder b) {
        this.endpoint = b.endpoint.resolve("/v1/loads");
        this.token = b.token;
        HttpClient.Builder http = HttpClient.newBuilder().connectTimeout(b.connectTimeout);
        if (b.sslContext != null) {
            http.sslContext(b.sslContext);
        }
        this.http = http.build();
        this.batchSize = b.batchSize;
        this.maxAttempts = b.maxAttempts;
        this.backoff = b.backoff;
        this.maxBackoff = b.maxBackoff;
        this.requestTimeout = b.requestTimeout;
        this.spool = b.spool;
        this.format = b.format;
        this.sleeper = b.sleeper;
        String target = endpoint.getHost() + ":" + endpoint.getPort();
        this.sent = Counter.builder("pa_collector_client_items_sent").description("items the collector accepted").tag("collector", target).register(b.registry);
        this.spooled = Counter.builder("pa_collector_client_batches_spooled").description("batches kept for later").tag("collector", target).register(b.registry);
        this.spoolFull = Counter.builder("pa_collector_client_spool_full").description("batches neither delivered nor kept: the spool was full")
                .tag("collector", target).register(b.registry);
        this.refusedBatches = Counter.builder("pa_collector_client_batches_refused").description("batches the collector refused for good")
                .tag("collector", target).register(b.registry);
    }

    public static Builder builder(URI endpoint, String token) {
        return new Builder(endpoint, token);
    }

    /**
     * Delivers what is spooled, then {@code loads} and {@code observations} in batches, in that order.
     *
     * @throws CollectorException           the collector refused a whole batch for good (401, 403, 413, 400)
     * @throws Spool.SpoolFullException     a batch could not be delivered and the spool has no room for it
     */
    public Delivery send(List<ModelLoaded> loads, List<LoadObserved> observations) throws InterruptedException {
        Delivery delivery = Delivery.NONE;
        int total = loads.size() + observations.size();
        for (int from = 0; from < total; from += batchSize) {
            int to = Math.min(total, from + batchSize);
            List<SpecificRecord> events = new ArrayList<>(to - from);
            for (int i = from; i < to; i++) {
                events.add(i < loads.size() ? loads.get(i) : observations.get(i - loads.size()));
            }
            delivery = delivery.plus(sendBatch(CollectorWire.body(events, format), to - from));
        }
        return delivery;
    }

    /** Delivers spooled batches, oldest first, until one cannot be; how many were delivered and what they said. */
    public Delivery drain() throws InterruptedException {
        if (spool == null) {
            return Delivery.NONE;
        }
        Delivery delivery = Delivery.NONE;
        try {
            for (Optional<Path> oldest = spool.oldest(); oldest.isPresent(); oldest = spool.oldest()) {
                Path batch = oldest.get();
                Optional<Delivery> result;
                try {
                    result = attempt(Files.readAllBytes(batch), Spool.format(batch));
                } catch (CollectorException e) {
                    // A batch refused for good (a deployment moved to another fleet, a bound lowered) is kept aside with why, not
                    // retried forever; a 401 is the token's fault, not the batch's: it stays first in line for a corrected token.
                    if (e.status() != 401) {
                        refusedBatches.increment();
                        spool.refused(batch, e.getMessage());
                    }
                    throw e;
                }
                if (result.isEmpty()) {
                    return delivery;
                }
                spool.delivered(batch);
                delivery = delivery.plus(new Delivery(result.get().accepted(), result.get().refused(), 0, 1));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the spool " + spool.dir(), e);
        }
        return delivery;
    }

    /** Items waiting in the spool's batches, as files. */
    public int spooledBatches() {
        try {
            return spool == null ? 0 : spool.batches().size();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private Delivery sendBatch(byte[] body, int items) throws InterruptedException {
        Delivery drained = drain();
        if (spool != null && spooledBatches() > 0) {
            // Earlier batches are still waiting: this one queues behind them, so the collector sees them in order.
            return drained.plus(keep(body, items));
        }
        Optional<Delivery> result = attempt(body, format);
        return drained.plus(result.orElseGet(() -> keep(body, items)));
    }

    private Delivery keep(byte[] body, int items) {
        if (spool == null) {
            throw new CollectorException("the collector at " + endpoint + " could not take a batch of " + items + " items after "
                    + maxAttempts + " attempts" + (lastFailure == null ? "" : " (" + ExchangeFailure.describe(lastFailure) + ")")
                    + ", and no spool is configured to keep it", 0, true, lastFailure);
        }
        try {
            spool.append(body, format);
        } catch (Spool.SpoolFullException e) {
            spoolFull.increment();
            throw e;
        } catch (IOException e) {
            spoolFull.increment();
            throw new CollectorException("cannot keep a batch in the spool " + spool.dir() + ": " + e.getMessage(), 0, false);
        }
        spooled.increment();
        return new Delivery(0, List.of(), items, 0);
    }

    /** What the last attempt met when it could not reach the collector, for the message that says it was kept or lost. */
    private IOException lastFailure;

    /** The batch's delivery, or empty when it could not be delivered within the attempts (keep it for later). */
    private Optional<Delivery> attempt(byte[] body, Format as) throws InterruptedException {
        lastFailure = null;
        for (int attempt = 1; attempt <= maxAttempts; attempt++) {
            Duration wait = backoff(attempt);
            try {
                HttpResponse<String> response = http.send(request(body, as), HttpResponse.BodyHandlers.ofString());
                int status = response.statusCode();
                if (status == 202 || status == 422) {
                    Delivery delivery = CollectorWire.delivery(response.body());
                    sent.increment(delivery.accepted());
                    return Optional.of(delivery);
                }
                if (status == 429 || status == 503 || status >= 500) {
                    Duration asked = response.headers().firstValue("Retry-After").map(CollectorClient::seconds).orElse(Duration.ZERO);
                    wait = asked.compareTo(wait) > 0 ? asked : wait;
                } else {
                    throw new CollectorException("the collector at " + endpoint + " refused the batch (" + status + "): " + CollectorWire.error(response.body()),
                            status, false);
                }
            } catch (IOException e) {
                // Offline, refused connection, timeout: the same as a 503 without advice. A mistake in the set-up (TLS, the
                // scheme) is not: no retry or spool can fix it, so it is said at once.
                Optional<String> mistake = ExchangeFailure.setUpMistake(e, endpoint);
                if (mistake.isPresent()) {
                    throw new CollectorException(mistake.get(), 0, false, e);
                }
                lastFailure = e;
            }
            if (attempt < maxAttempts) {
                sleeper.sleep(wait);
            }
        }
        return Optional.empty();
    }

    private HttpRequest request(byte[] body, Format as) {
        return HttpRequest.newBuilder(endpoint).timeout(requestTimeout).header("Authorization", "Bearer " + token)
                .header("Content-Type", as.contentType).header("Content-Encoding", "gzip")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build();
    }

    /** Exponential from {@code backoff}, capped, with full jitter (half to all of it), so a fleet does not retry in step. */
    private Duration backoff(int attempt) {
        long ceiling = Math.min(maxBackoff.toMillis(), backoff.toMillis() << Math.min(20, attempt - 1));
        return Duration.ofMillis(ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1));
    }

    private static Duration seconds(String retryAfter) {
        try {
            return Duration.ofSeconds(Math.max(0, Long.parseLong(retryAfter.trim())));
        } catch (NumberFormatException e) {
            return Duration.ZERO;
        }
    }

    /** How a client is made; every setting but the endpoint and the token has a default. */
    public static final class Builder {
        private final URI endpoint;
        private final String token;
        private int batchSize = 100;
        private int maxAttempts = 5;
        private Duration backoff = Duration.ofMillis(200);
        private Duration maxBackoff = Duration.ofSeconds(30);
        private Duration connectTimeout = Duration.ofSeconds(5);
        private Duration requestTimeout = Duration.ofSeconds(30);
        private SSLContext sslContext;
        private Spool spool;
        private Format format = Format.AVRO;
        private Sleeper sleeper = d -> Thread.sleep(d.toMillis());
        private MeterRegistry registry = Metrics.globalRegistry;

        private Builder(URI endpoint, String token) {
            this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
            this.token = Objects.requireNonNull(token, "token").trim();
        }

        /** Items per request (default 100); the collector takes at most collector.max.items. */
        public Builder batchSize(int items) {
            if (items < 1) {
                throw new IllegalArgumentException("batchSize must be at least 1, was " + items);
            }
            this.batchSize = items;
            return this;
        }

        /** Attempts per batch before it is spooled (default 5), the first backoff (200 ms) and its cap (30 s). */
        public Builder retries(int attempts, Duration firstBackoff, Duration cap) {
            if (attempts < 1) {
                throw new IllegalArgumentException("attempts must be at least 1, was " + attempts);
            }
            this.maxAttempts = attempts;
            this.backoff = firstBackoff;
            this.maxBackoff = cap;
            return this;
        }

        public Builder timeouts(Duration connect, Duration request) {
            this.connectTimeout = connect;
            this.requestTimeout = request;
            return this;
        }

        /** For a collector whose certificate the JVM's default trust store does not hold. */
        public Builder sslContext(SSLContext context) {
            this.sslContext = context;
            return this;
        }

        /** Keep what cannot be delivered in {@code dir}, at most {@code maxBytes} (gzip) of it. */
        public Builder spool(Path dir, long maxBytes) {
            this.spool = new Spool(dir, maxBytes);
            return this;
        }

        /** How batches are written (default {@link Format#AVRO}). */
        public Builder format(Format format) {
            this.format = Objects.requireNonNull(format, "format");
            return this;
        }

        public Builder sleeper(Sleeper sleeper) {
            this.sleeper = sleeper;
            return this;
        }

        /** Where the client's counters go (default Micrometer's global registry). */
        public Builder registry(MeterRegistry registry) {
            this.registry = registry;
            return this;
        }

        public CollectorClient build() {
            return new CollectorClient(this);
        }
    }
}
