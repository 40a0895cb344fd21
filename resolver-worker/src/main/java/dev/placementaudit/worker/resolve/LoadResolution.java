package dev.placementaudit.worker.resolve;

import dev.placementaudit.core.format.Format;
import dev.placementaudit.core.placement.AllocationDecision;
import dev.placementaudit.core.placement.AllocationResolver;
import dev.placementaudit.core.placement.Explanations;
import dev.placementaudit.core.placement.MemoryDomain;
import dev.placementaudit.core.placement.PlanTensor;
import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ReasonCode;
import dev.placementaudit.events.ScopeKind;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Turns a validated load into events. Deterministic apart from {@code decidedAt}: the same load, resolved again
 * by the same resolver version, yields the same decision ids, which is what makes a replay idempotent downstream.
 */
public final class LoadResolution {
    // The event enums mirror the core ones symbol for symbol (LoadResolutionTest checks); index by ordinal.
    private static final dev.placementaudit.events.MemoryDomain[] DOMAINS = dev.placementaudit.events.MemoryDomain.values();
    private static final ScopeKind[] SCOPES = ScopeKind.values();
    private static final ReasonCode[] REASONS = ReasonCode.values();

    private final String resolverVersion;

    public LoadResolution(String resolverVersion) {
        this.resolverVersion = resolverVersion;
    }

    public String resolverVersion() {
        return resolverVersion;
    }

    /**
     * A name-based (RFC 4122 v3) UUID of load, tensor and resolver version: the same value
     * {@code UUID.nameUUIDFromBytes} gives for {@code loadId NUL tensorName NUL resolverVersion}.
     */
    public static String decisionId(UUID loadId, String tensorName, String resolverVersion) {
        return new DecisionIds(loadId.toString(), resolverVersion).of(tensorName);
    }

    /**
     * Decision ids for the tensors of one load. The digest is fed the load's and the version's bytes, encoded once,
     * around each tensor's name, because this runs once per tensor. It holds the creating thread's MD5: use it on
     * that thread only (a load is resolved on one).
     */
    private static final class DecisionIds {
        private final byte[] prefix;
        private final byte[] suffix;
        private final MessageDigest md5 = MD5.get();

        DecisionIds(String loadId, String resolverVersion) {
            this.prefix = (loadId + "\u0000").getBytes(StandardCharsets.UTF_8);
            this.suffix = ("\u0000" + resolverVersion).getBytes(StandardCharsets.UTF_8);
        }

        String of(String tensorName) {
            // The name's bytes first: a digest left half-fed by a failure would corrupt the thread's next id.
            byte[] name = tensorName.getBytes(StandardCharsets.UTF_8);
            md5.update(prefix);
            md5.update(name);
            byte[] hash = md5.digest(suffix);
            hash[6] = (byte) ((hash[6] & 0x0f) | 0x30);
            hash[8] = (byte) ((hash[8] & 0x3f) | 0x80);
            ByteBuffer bytes = ByteBuffer.wrap(hash);
            return new UUID(bytes.getLong(), bytes.getLong()).toString();
        }
    }

    private static final ThreadLocal<MessageDigest> MD5 = ThreadLocal.withInitial(() -> {
        try {
            return MessageDigest.getInstance("MD5");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM ships MD5", e);
        }
    });

    public ResolvedLoad resolve(ValidLoad load, Provenance source, Instant decidedAt) {
        ModelLoaded event = load.event();
        String digest = load.policy().digest();
        List<PlanTensor> tensors = load.tensors();
        List<AllocationDecided> decisions = new ArrayList<>(tensors.size());
        Totals totals = new Totals();
        PerLoad shared = new PerLoad(event, digest, source, decidedAt);
        for (int i = 0; i < tensors.size(); i++) {
            PlanTensor tensor = tensors.get(i);
            AllocationDecision decision = AllocationResolver.resolve(tensor, load.policy().profile(), load.policy().platform());
            totals.add(tensor, decision);
            decisions.add(decided(shared, tensor, decision, i, tensors.size()));
        }
        return new ResolvedLoad(decisions, summary(event, totals, tensors.size(), digest, source, decidedAt));
    }

    /**
     * What every decision of one load repeats, worked out once: the load id as text and its decision-id digest
     * input, each distinct format and reason rendered once (a model has a handful of each, not one per tensor).
     */
    private final class PerLoad {
        final ModelLoaded event;
        final String loadId;
        final long occurredAt;
        final String digest;
        final Provenance source;
        final long decidedAt;
        final DecisionIds ids;
        final Map<Format, String> formats = new HashMap<>();
        final Explanations explanations = new Explanations();

        PerLoad(ModelLoaded event, String digest, Provenance source, Instant decidedAt) {
            this.event = event;
            this.loadId = event.getLoadId().toString();
            this.occurredAt = event.getOccurredAt().toEpochMilli();
            this.digest = digest;
            this.source = source;
            this.decidedAt = decidedAt.toEpochMilli();
            this.ids = new DecisionIds(loadId, resolverVersion);
        }

        String format(Format format) {
            return formats.computeIfAbsent(format, Format::toString);
        }
    }

    /**
     * The generated all-fields constructor, not the builder: this runs once per tensor, and the builder's per-field
     * validation was a fifth of the worker's CPU. Arguments follow the schema's field order.
     */
    private AllocationDecided decided(PerLoad load, PlanTensor tensor, AllocationDecision decision, int index, int count) {
        ModelLoaded event = load.event;
        return new AllocationDecided(
                load.ids.of(tensor.name()),
                load.loadId,
                load.occurredAt,
                event.getDeployment().getId(),
                event.getDeployment().getCluster(),
                event.getDeployment().getHost(),
                event.getRelease(),
                event.getModel().getId(),
                event.getModel().getName(),
                event.getModel().getSha256(),
                event.getPlatform().getName(),
                event.getProfile().getName(),
                tensor.name(),
                index,
                count,
                tensor.format().dtype().name(),
                tensor.format().encoding().spec(),
                load.format(tensor.format()),
                tensor.elementCount(),
                tensor.bytes(),
                load.format(decision.residentFormat()),
                decision.residentBytes(),
                DOMAINS[decision.domain().ordinal()],
                SCOPES[decision.scope().ordinal()],
                decision.spec().mutable(),
                decision.spec().alignment(),
                decision.mappingRequested(),
                REASONS[decision.primaryReason().ordinal()],
                REASONS[decision.placement().ordinal()],
                decision.mappingBlockers().isEmpty() ? List.of()
                        : decision.mappingBlockers().stream().map(code -> REASONS[code.ordinal()]).toList(),
                load.explanations.of(decision),
                resolverVersion,
                load.digest,
                load.source.topic(),
                load.source.partition(),
                load.source.offset(),
                load.decidedAt);
    }

    private LoadResolved summary(ModelLoaded event, Totals totals, int count, String digest, Provenance source, Instant resolvedAt) {
        return LoadResolved.newBuilder()
                .setLoadId(event.getLoadId())
                .setLoadOccurredAt(event.getOccurredAt())
                .setDeploymentId(event.getDeployment().getId())
                .setCluster(event.getDeployment().getCluster())
                .setHost(event.getDeployment().getHost())
                .setRelease(event.getRelease())
                .setModelId(event.getModel().getId())
                .setModelName(event.getModel().getName())
                .setModelSha256(event.getModel().getSha256())
                .setPlatformName(event.getPlatform().getName())
                .setProfileName(event.getProfile().getName())
                .setTensorCount(count)
                .setStoredBytes(totals.stored)
                .setResidentBytes(totals.resident)
                .setHeapBytes(totals.heapBytes)
                .setOffHeapBytes(totals.offHeapBytes)
                .setMappedBytes(totals.mappedBytes)
                .setHeapTensors(totals.heapTensors)
                .setOffHeapTensors(totals.offHeapTensors)
                .setMappedTensors(totals.mappedTensors)
                .setMappingRequestedTensors(totals.mappingRequested)
                .setMappingRefusedTensors(totals.mappingRefused)
                .setResolverVersion(resolverVersion)
                .setPolicyDigest(digest)
                .setSourceTopic(source.topic())
                .setSourcePartition(source.partition())
                .setSourceOffset(source.offset())
                .setResolvedAt(resolvedAt)
                .build();
    }

    private static final class Totals {
        long stored;
        long resident;
        long heapBytes;
        long offHeapBytes;
        long mappedBytes;
        int heapTensors;
        int offHeapTensors;
        int mappedTensors;
        int mappingRequested;
        int mappingRefused;

        void add(PlanTensor tensor, AllocationDecision decision) {
            stored += tensor.bytes();
            resident += decision.residentBytes();
            MemoryDomain domain = decision.domain();
            if (domain == MemoryDomain.MMAP_FILE) {
                mappedBytes += decision.residentBytes();
                mappedTensors++;
            } else if (domain == MemoryDomain.HOST_OFFHEAP) {
                offHeapBytes += decision.residentBytes();
                offHeapTensors++;
            } else {
                heapBytes += decision.residentBytes();
                heapTensors++;
            }
            if (decision.mappingRequested()) {
                mappingRequested++;
                if (!decision.mappingBlockers().isEmpty()) {
                    mappingRefused++;
                }
            }
        }
    }
}
