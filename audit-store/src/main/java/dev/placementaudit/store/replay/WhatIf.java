package dev.placementaudit.store.replay;

import dev.placementaudit.core.format.TensorEncoding;
import dev.placementaudit.core.placement.AllocationDecision;
import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.core.placement.PlacementPolicy;
import dev.placementaudit.core.placement.PlanTensor;
import dev.placementaudit.core.placement.StorageCapabilities;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.RuntimeIdentity;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.resolution.llamacpp.CpuFeatures;
import dev.placementaudit.resolution.llamacpp.LlamaCppPlanning;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.schemas.UndecodableEventException;
import dev.placementaudit.service.cli.CommandFailure;
import dev.placementaudit.service.cli.KafkaReachability;
import dev.placementaudit.store.plans.PlanCache;
import dev.placementaudit.resolution.InvalidLoadException;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.resolution.ValidLoad;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;

/**
 * "If this policy had shipped": re-resolves the historical ModelLoaded events of a time range under a candidate
 * policy and compares every tensor with the decision recorded for it. Reads the log and the projection; writes
 * nothing. Events of every released schema version decode, as replay needs.
 */
public final class WhatIf {
    private static final int MAX_TENSOR_ROWS = 10_000;

    private final DataSource database;
    private final Map<String, Object> kafka;
    private final String loadsTopic;
    private final Duration maxWait;
    /** Plans read, by digest, for as long as this what-if lives (a plan never changes). */
    private final PlanCache plans = new PlanCache(256);
    private final LoadValidator validator = new LoadValidator(10_000_000);
    private final EventSerde<ModelLoaded> loads = EventSerde.of(ModelLoaded.class);

    public WhatIf(DataSource database, Map<String, Object> kafka, String loadsTopic) {
        this(database, kafka, loadsTopic, Duration.ofSeconds(30));
    }

    /** @param maxWait the longest any Kafka call may wait, and the longest the replay may go without a record before it gives up */
    public WhatIf(DataSource database, Map<String, Object> kafka, String loadsTopic, Duration maxWait) {
        this.database = database;
        this.kafka = Map.copyOf(kafka);
        this.loadsTopic = loadsTopic;
        this.maxWait = maxWait;
    }

    /**
     * What to change; empty fields keep what each load recorded.
     *
     * @param llamaCppCpu  llama.cpp loads re-planned for this CPU (its features pick the repack layouts)
     * @param llamaCppMmap llama.cpp loads re-planned with mmap on or off
     */
    public record CandidatePolicy(OptionalLong offHeapThresholdBytes, Optional<Set<TensorEncoding>> mappedServable,
                                  Optional<Boolean> offHeap, Optional<Boolean> mappedFiles, Optional<CpuFeatures> llamaCppCpu,
                                  Optional<Boolean> llamaCppMmap) {
        public CandidatePolicy(OptionalLong offHeapThresholdBytes, Optional<Set<TensorEncoding>> mappedServable, Optional<Boolean> offHeap,
                               Optional<Boolean> mappedFiles) {
            this(offHeapThresholdBytes, mappedServable, offHeap, mappedFiles, Optional.empty(), Optional.empty());
        }

        /** The load as it would be made under the candidate: a llama.cpp load on the candidate's CPU and mmap; others as recorded. */
        ModelLoaded apply(ModelLoaded recorded) {
            if (!LlamaCppPlanning.plans(recorded.getRuntime()) || (llamaCppCpu.isEmpty() && llamaCppMmap.isEmpty())) {
                return recorded;
            }
            RuntimeIdentity.Builder runtime = RuntimeIdentity.newBuilder(recorded.getRuntime());
            llamaCppCpu.ifPresent(cpu -> runtime.setCpuFeatures(cpu.names()));
            llamaCppMmap.ifPresent(runtime::setMmap);
            return ModelLoaded.newBuilder(recorded).setRuntime(runtime.build()).build();
        }

        /** The load validated under the candidate: its policy, and a llama.cpp load's CPU and mmap, replaced. */
        ValidLoad apply(ValidLoad recorded) {
            return new ValidLoad(apply(recorded.event()), apply(recorded.policy()), recorded.tensors());
        }

        PlacementPolicy apply(PlacementPolicy recorded) {
            var profile = offHeapThresholdBytes.isPresent() ? recorded.profile().withOffHeapThreshold(offHeapThresholdBytes.getAsLong())
                    : recorded.profile();
            StorageCapabilities platform = recorded.platform();
            if (mappedServable.isPresent()) {
                platform = platform.withMappedServableEncodings(mappedServable.get());
            }
            if (offHeap.isPresent()) {
                platform = platform.withOffHeap(offHeap.get());
            }
            if (mappedFiles.isPresent()) {
                platform = platform.withMappedFiles(mappedFiles.get());
            }
            return new PlacementPolicy(profile, platform);
        }

        public String describe() {
            List<String> parts = new ArrayList<>();
            offHeapThresholdBytes.ifPresent(t -> parts.add("off-heap threshold " + ByteSizes.format(t)));
            mappedServable.ifPresent(s -> parts.add("servable " + s.stream().map(TensorEncoding::spec).sorted().toList()));
            offHeap.ifPresent(o -> parts.add("off-heap " + (o ? "on" : "off")));
            mappedFiles.ifPresent(m -> parts.add("mapped files " + (m ? "on" : "off")));
            llamaCppCpu.ifPresent(cpu -> parts.add("llama.cpp on " + cpu.name()));
            llamaCppMmap.ifPresent(m -> parts.add("llama.cpp mmap " + (m ? "on" : "off")));
            return parts.isEmpty() ? "the recorded policy" : String.join(", ", parts);
        }
    }

    public record Query(Instant from, Instant to, String deployment, String model, CandidatePolicy candidate) {
    }

    public enum Change { UNCHANGED, CHANGED, NEW }

    public record TensorChange(String loadId, String deploymentId, String release, String tensorName, Change change, String beforeDomain,
                               String afterDomain, long residentBytes, String afterReason) {
    }

    public record DeploymentTotals(String deploymentId, int loads, int unchanged, int changed, int added, Map<String, Long> deltaByDomain) {
    }

    public record Report(String policy, Instant from, Instant to, int loads, int skipped, int unchanged, int changed, int added,
                         Map<String, Long> deltaByDomain, List<DeploymentTotals> deployments, List<TensorChange> changes, String summary) {
    }

    public Report run(Query query) throws SQLException {
        return run(query, read(kafka, loadsTopic, maxWait, query));
    }

    /**
     * The recorded loads of the query's range, read committed from {@code model-loads}, before any database is opened: a
     * broker or topic that is not there is said first, in one line, within {@code maxWait}.
     */
    public static List<ConsumerRecord<byte[], byte[]>> read(Map<String, Object> kafka, String loadsTopic, Duration maxWait, Query query) {
        KafkaConsumer<byte[], byte[]> consumer = consumer(kafka, maxWait);
        try {
            return records(consumer, kafka, loadsTopic, maxWait, query);
        } finally {
            // Nothing to commit or leave (no group): waiting the default close for in-flight fetches cost half a second.
            consumer.close(Duration.ofMillis(100));
        }
    }

    /** The report over these recorded loads ({@link #read}). */
    public Report run(Query query, List<ConsumerRecord<byte[], byte[]>> read) throws SQLException {
        Map<String, Totals> perDeployment = new TreeMap<>();
        Totals fleet = new Totals("fleet");
        List<TensorChange> changes = new ArrayList<>();
        int skipped = 0;
        List<ValidLoad> inRange = new ArrayList<>(read.size());
        for (ConsumerRecord<byte[], byte[]> record : read) {
            ValidLoad valid;
            try {
                valid = validator.validate(loads.decode(record.value()));
            } catch (UndecodableEventException | InvalidLoadException e) {
                skipped++;
                continue;
            }
            ModelLoaded load = valid.event();
            if ((query.deployment() == null || query.deployment().equals(load.getDeployment().getId()))
                    && (query.model() == null || query.model().equals(load.getModel().getId()))) {
                inRange.add(valid);
            }
        }
        try (Connection c = database.getConnection()) {
            // Where each load's tensors landed, read once per plan: a fleet's loads share a few plans (docs/benchmarks.md).
            RecordedPlacements placements = RecordedPlacements.of(c, plans, inRange.stream().map(v -> v.event().getLoadId().toString()).toList());
            for (ValidLoad valid : inRange) {
                ModelLoaded load = valid.event();
                Map<String, String> recorded = placements.of(load.getLoadId().toString());
                Totals totals = perDeployment.computeIfAbsent(load.getDeployment().getId(), Totals::new);
                totals.loads++;
                fleet.loads++;
                // Under the rules the load's runtime plans by (llama.cpp's or SKaiNET's), as the worker decides it.
                List<AllocationDecision> decided = LoadResolution.decide(query.candidate().apply(valid));
                for (int i = 0; i < valid.tensors().size(); i++) {
                    PlanTensor tensor = valid.tensors().get(i);
                    AllocationDecision decision = decided.get(i);
                    String after = decision.domain().name();
                    String before = recorded.get(tensor.name());
                    Change change = before == null ? Change.NEW : before.equals(after) ? Change.UNCHANGED : Change.CHANGED;
                    totals.count(change, before, after, decision.residentBytes());
                    fleet.count(change, before, after, decision.residentBytes());
                    if (change != Change.UNCHANGED && changes.size() < MAX_TENSOR_ROWS) {
                        changes.add(new TensorChange(load.getLoadId().toString(), load.getDeployment().getId(), load.getRelease(), tensor.name(),
                                change, before, after, decision.residentBytes(), decision.reasonText()));
                    }
                }
            }
        }
        String summary = String.format(Locale.ROOT, "if %s had shipped: %,d of %,d tensors in %,d loads move; off-heap %s, heap %s, mapped %s",
                query.candidate().describe(), fleet.changed, fleet.changed + fleet.unchanged + fleet.added, fleet.loads,
                signed(fleet.delta("HOST_OFFHEAP")), signed(fleet.delta("HOST_HEAP")), signed(fleet.delta("MMAP_FILE")));
        return new Report(query.candidate().describe(), query.from(), query.to(), fleet.loads, skipped, fleet.unchanged, fleet.changed,
                fleet.added, fleet.delta, perDeployment.values().stream().map(Totals::row).toList(), changes, summary);
    }

    /**
     * The latest load of each deployment and model in the range (in log order: a deployment's loads share a
     * partition), validated, with the candidate policy in place of the one it recorded: what the fleet would run if
     * the candidate shipped now. Loads that do not decode or validate are left out, as in {@link #run}.
     */
    public List<ValidLoad> latestUnderCandidate(Query query) {
        return latestUnderCandidate(query, read(kafka, loadsTopic, maxWait, query));
    }

    /** The same, over these recorded loads ({@link #read}). */
    public List<ValidLoad> latestUnderCandidate(Query query, List<ConsumerRecord<byte[], byte[]>> read) {
        Map<List<String>, ValidLoad> latest = new LinkedHashMap<>();
        for (ConsumerRecord<byte[], byte[]> record : read) {
            ValidLoad valid;
            try {
                valid = validator.validate(loads.decode(record.value()));
            } catch (UndecodableEventException | InvalidLoadException e) {
                continue;
            }
            ModelLoaded load = valid.event();
            if ((query.deployment() != null && !query.deployment().equals(load.getDeployment().getId()))
                    || (query.model() != null && !query.model().equals(load.getModel().getId()))) {
                continue;
            }
            List<String> key = List.of(load.getDeployment().getId(), load.getModel().getId());
            latest.remove(key);
            latest.put(key, query.candidate().apply(valid));
        }
        return List.copyOf(latest.values());
    }

    private static KafkaConsumer<byte[], byte[]> consumer(Map<String, Object> kafka, Duration maxWait) {
        Map<String, Object> config = new HashMap<>(kafka);
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        config.remove(ConsumerConfig.GROUP_ID_CONFIG);
        config.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) Math.min(Integer.MAX_VALUE, maxWait.toMillis()));
        // It reads a known range to its end: a fetch that finds nothing new answers at once instead of waiting 500 ms for more.
        config.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 10);
        return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** The records of the time range, found with offsetsForTimes on every partition. */
    private static List<ConsumerRecord<byte[], byte[]>> records(KafkaConsumer<byte[], byte[]> consumer, Map<String, Object> kafka,
                                                               String loadsTopic, Duration maxWait, Query query) {
        List<TopicPartition> partitions = new ArrayList<>();
        List<PartitionInfo> infos;
        try {
            // The first answer the broker gives: no broker, or no such topic, is said here in one line, as an admin
            // client's check would, without the second client's cold start (0.7 s of a what-if on the demo).
            infos = consumer.partitionsFor(loadsTopic, maxWait);
        } catch (KafkaException e) {
            throw KafkaReachability.failure(e, kafka, maxWait, List.of(loadsTopic));
        }
        if (infos == null || infos.isEmpty()) {
            throw KafkaReachability.failure(new UnknownTopicOrPartitionException(loadsTopic), kafka, maxWait, List.of(loadsTopic));
        }
        for (PartitionInfo info : infos) {
            partitions.add(new TopicPartition(loadsTopic, info.partition()));
        }
        Map<TopicPartition, Long> fromTimes = new HashMap<>();
        Map<TopicPartition, Long> toTimes = new HashMap<>();
        partitions.forEach(p -> {
            fromTimes.put(p, query.from().toEpochMilli());
            toTimes.put(p, query.to().toEpochMilli());
        });
        Map<TopicPartition, OffsetAndTimestamp> starts = consumer.offsetsForTimes(fromTimes, maxWait);
        Map<TopicPartition, OffsetAndTimestamp> ends = consumer.offsetsForTimes(toTimes, maxWait);
        Map<TopicPartition, Long> endOffsets = consumer.endOffsets(partitions, maxWait);
        // Every partition with records in the range at once: one fetch serves them all, where one partition after another
        // waited a fetch each (docs/benchmarks.md, the what-if).
        Map<TopicPartition, Long> until = new HashMap<>();
        for (TopicPartition partition : partitions) {
            OffsetAndTimestamp start = starts.get(partition);
            long end = start == null ? -1 : ends.get(partition) == null ? endOffsets.get(partition) : ends.get(partition).offset();
            if (start != null && start.offset() < end) {
                until.put(partition, end);
            }
        }
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        if (until.isEmpty()) {
            return records;
        }
        consumer.assign(until.keySet());
        until.keySet().forEach(partition -> consumer.seek(partition, starts.get(partition).offset()));
        Map<TopicPartition, Long> positions = new HashMap<>();
        until.keySet().forEach(partition -> positions.put(partition, consumer.position(partition)));
        long lastAdvance = System.nanoTime();
        while (until.entrySet().stream().anyMatch(e -> positions.get(e.getKey()) < e.getValue())) {
            for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                if (record.offset() < until.get(new TopicPartition(record.topic(), record.partition()))) {
                    records.add(record);
                }
            }
            boolean advanced = false;
            for (TopicPartition partition : until.keySet()) {
                long now = consumer.position(partition);
                if (now > positions.get(partition)) {
                    positions.put(partition, now);
                    advanced = true;
                }
                if (now >= until.get(partition) && !consumer.paused().contains(partition)) {
                    consumer.pause(List.of(partition)); // read to its end: fetch the others only
                }
            }
            if (advanced) {
                lastAdvance = System.nanoTime();
            } else if (System.nanoTime() - lastAdvance > maxWait.toNanos()) {
                // A broker gone mid-replay: give up, naming what is left, rather than poll forever.
                long left = until.entrySet().stream().mapToLong(e -> Math.max(0, e.getValue() - positions.get(e.getKey()))).sum();
                throw new CommandFailure("what-if stalled: Kafka at " + kafka.get("bootstrap.servers") + " returned nothing from " + loadsTopic
                        + " for " + maxWait.toSeconds() + " s, " + left + " records before the end of the range");
            }
        }
        // Each partition's records in log order (a deployment's loads share one), partitions in order, as read one by one before.
        records.sort(Comparator.comparingInt((ConsumerRecord<byte[], byte[]> r) -> r.partition()).thenComparingLong(ConsumerRecord::offset));
        return records;
    }

    /**
     * What moves per domain, in bytes a person reads and in one order, off-heap first: {@code off-heap +1.2 GB, mapped
     * -1.2 GB}; {@code -} when nothing does.
     */
    public static String deltas(Map<String, Long> byDomain) {
        List<String> parts = new ArrayList<>();
        Map<String, String> names = new LinkedHashMap<>();
        names.put("HOST_OFFHEAP", "off-heap");
        names.put("HOST_HEAP", "heap");
        names.put("MMAP_FILE", "mapped");
        new TreeMap<>(byDomain).keySet().forEach(domain -> names.putIfAbsent(domain, domain));
        names.forEach((domain, name) -> {
            long bytes = byDomain.getOrDefault(domain, 0L);
            if (bytes != 0) {
                parts.add(name + " " + signed(bytes));
            }
        });
        return parts.isEmpty() ? "-" : String.join(", ", parts);
    }

    private static String signed(long bytes) {
        return (bytes >= 0 ? "+" : "-") + ByteSizes.format(Math.abs(bytes));
    }

    private static final class Totals {
        final String deploymentId;
        final Map<String, Long> delta = new LinkedHashMap<>();
        int loads;
        int unchanged;
        int changed;
        int added;

        Totals(String deploymentId) {
            this.deploymentId = deploymentId;
        }

        void count(Change change, String before, String after, long bytes) {
            switch (change) {
                case UNCHANGED -> unchanged++;
                case NEW -> added++;
                case CHANGED -> {
                    changed++;
                    delta.merge(before, -bytes, Long::sum);
                    delta.merge(after, bytes, Long::sum);
                }
            }
        }

        long delta(String domain) {
            return delta.getOrDefault(domain, 0L);
        }

        DeploymentTotals row() {
            return new DeploymentTotals(deploymentId, loads, unchanged, changed, added, Map.copyOf(delta));
        }
    }
}
