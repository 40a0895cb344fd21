package dev.placementaudit.resolution;

import dev.placementaudit.core.placement.AllocationDecision;
import dev.placementaudit.core.placement.AllocationResolver;
import dev.placementaudit.core.placement.MemoryDomain;
import dev.placementaudit.core.placement.PlanTensor;
import dev.placementaudit.events.Divergence;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.RuntimeDecision;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.RuntimeIdentity;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.resolution.llamacpp.LlamaCppPlanning;
import dev.placementaudit.schemas.LoadLayouts;
import dev.placementaudit.schemas.PlanDigest;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Turns a validated load into events. Deterministic apart from {@code decidedAt}: the same load, resolved again
 * by the same resolver version, yields the same decision ids, which is what makes a replay idempotent downstream.
 */
public final class LoadResolution {
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
        return new String(new DecisionIds(loadId.toString(), resolverVersion).of(tensorName.getBytes(StandardCharsets.UTF_8)),
                StandardCharsets.US_ASCII);
    }

    /**
     * Decision ids for the tensors of one load. The digest is fed the load's and the version's bytes, encoded once,
     * around each tensor's name, because this runs once per tensor. It holds the creating thread's MD5: use it on
     * that thread only (a load is resolved on one).
     */
    private static final class DecisionIds {
        private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
        private final byte[] prefix;
        private final byte[] suffix;
        private final MessageDigest md5 = MD5.get();

        DecisionIds(String loadId, String resolverVersion) {
            this.prefix = (loadId + "\u0000").getBytes(StandardCharsets.UTF_8);
            this.suffix = ("\u0000" + resolverVersion).getBytes(StandardCharsets.UTF_8);
        }

        /** The id of the tensor with this UTF-8 name, as the 36 characters of {@code UUID.toString}, in ASCII. */
        byte[] of(byte[] name) {
            md5.update(prefix);
            md5.update(name);
            byte[] hash = md5.digest(suffix);
            hash[6] = (byte) ((hash[6] & 0x0f) | 0x30);
            hash[8] = (byte) ((hash[8] & 0x3f) | 0x80);
            byte[] text = new byte[36];
            int at = 0;
            for (int i = 0; i < 16; i++) {
                if (i == 4 || i == 6 || i == 8 || i == 10) {
                    text[at++] = '-';
                }
                text[at++] = HEX[(hash[i] >> 4) & 0xF];
                text[at++] = HEX[hash[i] & 0xF];
            }
            return text;
        }
    }

    private static final ThreadLocal<MessageDigest> MD5 = ThreadLocal.withInitial(() -> {
        try {
            return MessageDigest.getInstance("MD5");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM ships MD5", e);
        }
    });

    /**
     * The reference's decision for every tensor of a validated load, in tensor order: what the worker decides for it.
     * A runtime that loads as the plan says (the producer's reference loader) asks this, not a copy of the rules.
     */
    public static List<AllocationDecision> decide(ValidLoad load) {
        if (LlamaCppPlanning.plans(load.event().getRuntime())) {
            return LlamaCppPlanning.decide(load);
        }
        List<AllocationDecision> decided = new ArrayList<>(load.tensors().size());
        for (PlanTensor tensor : load.tensors()) {
            decided.add(AllocationResolver.resolve(tensor, load.policy().profile(), load.policy().platform()));
        }
        return decided;
    }

    /**
     * Every tensor's decision, encoded as the worker sends it (see {@link DecisionEncoder}), and the load's summary.
     */
    public ResolvedLoad resolve(ValidLoad load, Provenance source, Instant decidedAt) {
        return Layout.of(load).resolve(load.event(), this, source, decidedAt);
    }

    /**
     * The same for a load not validated yet, validated here: what the worker calls for every record. A load whose
     * tensors, profile and platform are, value for value, those of a load resolved here before (every load of one model
     * file under one policy: a fleet's usual case) reuses that load's layout (its validated tensors, decisions, plan
     * digest and encoded tensor fields) and pays only for what is its own: the checks of the rest of the load, its
     * decision ids and the copying of its records. The bytes are the same either way (DecisionEncoderTest).
     *
     * @throws InvalidLoadException as {@link LoadValidator#validate} throws it
     */
    public ResolvedLoad resolve(ModelLoaded event, LoadValidator validator, Provenance source, Instant decidedAt) {
        return checkedLayout(event, validator).resolve(event, this, source, decidedAt);
    }

    /** The event's layout, remembered or made; the event checked either way. */
    private Layout checkedLayout(ModelLoaded event, LoadValidator validator) {
        LayoutKey key = LayoutKey.of(validator, event);
        Layout layout = layouts.get(key);
        if (layout == null) {
            layout = Layout.of(validator.validate(event));
            keep(layouts, key, layout);
        } else {
            validator.checkAllButTheLayout(event);
        }
        return layout;
    }

    /**
     * The same for a load read with {@link LoadLayouts}, what the worker calls for every record: a load whose layout
     * {@code LoadLayouts} knew shares its decoded layout objects with the load that {@linkplain LoadLayouts.Read#remember
     * remembered} it, and its layout here is found by those objects' identity, with no look at its tensors (hashing and
     * comparing 146 decoded tensors was 9% of the worker's samples, decoding them 18%). A load that is valid is
     * remembered there. The bytes are the same as {@link #resolve(ModelLoaded, LoadValidator, Provenance, Instant)}'s.
     *
     * @throws InvalidLoadException as {@link LoadValidator#validate} throws it
     */
    public ResolvedLoad resolve(LoadLayouts.Read read, LoadValidator validator, Provenance source, Instant decidedAt) {
        ModelLoaded event = read.load();
        LayoutKey shared = LayoutKey.sharedBy(validator, event);
        Layout layout = read.known() ? sharedLayouts.get(shared) : null;
        if (layout != null) {
            validator.checkAllButTheLayout(event);
            return layout.resolve(event, this, source, decidedAt);
        }
        layout = checkedLayout(event, validator);
        if (read.known() || read.remember()) {
            // From now on LoadLayouts hands out this load's layout objects for these bytes.
            keep(sharedLayouts, shared, layout);
        }
        return layout.resolve(event, this, source, decidedAt);
    }

    /** Layouts by the identity of the objects LoadLayouts shares between loads of one layout. */
    private final Map<LayoutKey, Layout> sharedLayouts = new ConcurrentHashMap<>();

    /**
     * A fleet runs a handful of models under a handful of policies; more distinct layouts than {@link #LAYOUTS} are
     * resolved afresh rather than remembered without bound.
     */
    private static void keep(Map<LayoutKey, Layout> remembered, LayoutKey key, Layout layout) {
        if (remembered.size() >= LAYOUTS) {
            remembered.clear();
        }
        remembered.put(key, layout);
    }

    /** How many layouts are remembered now (for tests). */
    int layoutsRemembered() {
        return layouts.size();
    }

    /** How many layouts a resolution remembers. */
    public static final int LAYOUTS = 128;
    private final Map<LayoutKey, Layout> layouts = new ConcurrentHashMap<>();

    /**
     * What a load's tensors, profile and platform alone decide: the validated tensors' decisions, the plan digest, the
     * totals, and each decision's tensor fields encoded. Immutable once made; shared by the threads that resolve.
     */
    private static final class Layout {
        private final String policyDigest;
        private final byte[][] names;
        private final byte[][] tensorFields;
        private final String planDigest;
        private final Totals totals;

        private Layout(String policyDigest, byte[][] names, byte[][] tensorFields, String planDigest, Totals totals) {
            this.policyDigest = policyDigest;
            this.names = names;
            this.tensorFields = tensorFields;
            this.planDigest = planDigest;
            this.totals = totals;
        }

        static Layout of(ValidLoad load) {
            ModelLoaded event = load.event();
            List<PlanTensor> tensors = load.tensors();
            Totals totals = new Totals();
            DecisionEncoder encoder = new DecisionEncoder();
            byte[][] names = new byte[tensors.size()][];
            byte[][] fields = new byte[tensors.size()][];
            PlanDigest plan = new PlanDigest();
            List<AllocationDecision> decisions = decide(load);
            for (int i = 0; i < tensors.size(); i++) {
                PlanTensor tensor = tensors.get(i);
                TensorInfo info = event.getTensors().get(i);
                AllocationDecision decided = decisions.get(i);
                totals.add(tensor, decided);
                totals.compare(info.getRuntime(), decided, i);
                // The name's bytes are taken once, for the id, the name field and the explanation that starts with it.
                names[i] = tensor.name().getBytes(StandardCharsets.UTF_8);
                encoder.digest(plan, names[i], tensor, info.getSizeEstimated(), decided, i);
                fields[i] = encoder.tensorFields(names[i], tensor, info.getSizeEstimated(), decided, i, tensors.size());
            }
            RuntimeIdentity runtime = event.getRuntime();
            String policyDigest = LlamaCppPlanning.plans(runtime) ? LlamaCppPlanning.policyDigest(load.policy().digest(), runtime) : load.policy().digest();
            return new Layout(policyDigest, names, fields, plan.digest(), totals);
        }

        /** This layout's decisions for one load, and its summary. */
        ResolvedLoad resolve(ModelLoaded event, LoadResolution resolution, Provenance source, Instant decidedAt) {
            String loadId = event.getLoadId().toString();
            DecisionIds ids = new DecisionIds(loadId, resolution.resolverVersion);
            DecisionEncoder.Frame frame = DecisionEncoder.frame(event, loadId, resolution.resolverVersion, policyDigest, source,
                    decidedAt.toEpochMilli(), planDigest);
            List<byte[]> decisions = new ArrayList<>(names.length);
            for (int i = 0; i < names.length; i++) {
                decisions.add(frame.encode(ids.of(names[i]), tensorFields[i]));
            }
            return new ResolvedLoad(decisions, resolution.summary(event, totals, names.length, policyDigest, planDigest, source, decidedAt));
        }
    }

    private LoadResolved summary(ModelLoaded event, Totals totals, int count, String digest, String planDigest, Provenance source,
                                 Instant resolvedAt) {
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
                .setPlanDigest(planDigest)
                .setRuntimeReportedTensors(totals.runtimeReported)
                .setDivergedTensors(totals.divergences.size())
                // A copy: the layout's totals are shared by every load of it.
                .setDivergences(new ArrayList<>(totals.divergences))
                .setRuntime(LlamaCppPlanning.context(event.getRuntime()))
                .build();
    }

    /**
     * A tensor whose runtime put it elsewhere than the reference, or held another size of it, than the reference
     * resolver decides from the same inputs: a DIVERGED finding. {@code null} when the runtime did not report the
     * tensor or agrees with the reference.
     */
    public static Divergence divergence(RuntimeDecision runtime, AllocationDecision reference, int index) {
        if (runtime == null || (runtime.getDomain().name().equals(reference.domain().name())
                && runtime.getResidentBytes() == reference.residentBytes())) {
            return null;
        }
        return Divergence.newBuilder()
                .setTensorName(reference.tensorName())
                .setTensorIndex(index)
                .setRuntimeDomain(runtime.getDomain().name())
                .setRuntimeResidentBytes(runtime.getResidentBytes())
                .setReferenceDomain(reference.domain().name())
                .setReferenceResidentBytes(reference.residentBytes())
                .setReferenceReasonCode(reference.primaryReason().name())
                .setReferenceReason(reference.explanation())
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
        int runtimeReported;
        final List<Divergence> divergences = new ArrayList<>(0);

        void compare(RuntimeDecision runtime, AllocationDecision reference, int index) {
            if (runtime != null) {
                runtimeReported++;
                Divergence diverged = divergence(runtime, reference, index);
                if (diverged != null) {
                    divergences.add(diverged);
                }
            }
        }

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
