package dev.placementaudit.resolution;

import dev.placementaudit.core.format.Format;
import dev.placementaudit.core.placement.AllocationDecision;
import dev.placementaudit.core.placement.Explanations;
import dev.placementaudit.core.placement.PlanTensor;
import dev.placementaudit.core.placement.ReasonCode;
import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.schemas.PlanDigest;
import org.apache.avro.Schema;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.Encoder;
import org.apache.avro.io.EncoderFactory;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes one load's AllocationDecided records straight to their single-object encoded bytes, field by field in
 * the schema's order, into {@link EventSerde#encode(EventSerde.Body)}: the very bytes EventSerde writes for the event
 * object (DecisionEncoderTest compares them for whole simulated fleets), without building that object first.
 *
 * <p>Why: a decision repeats 17 fields of its load (ids, deployment, model, profile, provenance), and its formats
 * and explanation repeat across a model's tensors. Encoded once per load, or once per distinct format and reason,
 * they are copied, not re-encoded, for each of a load's 146 tensors. Resolving a Llama load and encoding its
 * decisions through event objects took 119 of the 168 us of the worker's per-record path; this way it takes 71
 * (PrepareBenchmark, bench/results/prepare-20261202-2015.md). The fields a decision has of its tensor alone
 * ({@link #tensorFields}) are the same in every load of one layout (LoadResolution keeps them per layout); the
 * load's own ({@link Frame}) are encoded once per load, and a decision is its id and the two, copied.
 *
 * <p>The field names and order are checked against the schema when this class loads, so a schema that gains, loses
 * or reorders a field fails every resolve with a message that says so, rather than writing records that do not
 * decode; a field whose type changes, or an enum whose symbols move, fails DecisionEncoderTest and
 * LoadResolutionTest.
 * Not thread-safe: one per layout, on the thread that resolves it ({@link Frame} is immutable).
 */
final class DecisionEncoder {
    /** AllocationDecided's fields, in the order {@link Frame#encode} writes them. */
    static final List<String> FIELDS = List.of("decisionId", "loadId", "loadOccurredAt", "deploymentId", "cluster", "host",
            "release", "modelId", "modelName", "modelSha256", "platformName", "profileName", "tensorName", "tensorIndex",
            "tensorCount", "dtype", "storedEncoding", "storedFormat", "elementCount", "storedBytes", "sizeEstimated", "residentFormat",
            "residentBytes", "domain", "scope", "mutable", "alignment", "mappingRequested", "reasonCode", "placementReason",
            "mappingBlockers", "reason", "resolverVersion", "policyDigest", "sourceTopic", "sourcePartition", "sourceOffset",
            "decidedAt", "planDigest");
    private static final EventSerde<AllocationDecided> SERDE = EventSerde.of(AllocationDecided.class);
    /** A decision id's length (a UUID's text) and that length as Avro writes a string's (a zig-zag varint: one byte). */
    private static final int ID_LENGTH = 36;
    private static final byte[] ID_PREFIX = fragment(out -> out.writeInt(ID_LENGTH));

    static {
        List<String> actual = AllocationDecided.getClassSchema().getFields().stream().map(Schema.Field::name).toList();
        if (!actual.equals(FIELDS)) {
            throw new IllegalStateException("AllocationDecided's schema has the fields " + actual + " but DecisionEncoder writes "
                    + FIELDS + ": change DecisionEncoder with the schema");
        }
    }

    /** dtype, storedEncoding and storedFormat of each stored format met in this layout. */
    private final Map<Format, byte[]> storedFormats = new HashMap<>();
    /** residentFormat of each resident format met in this layout. */
    private final Map<Format, byte[]> residentFormats = new HashMap<>();
    /** Each reason's explanation tail, rendered once per layout: the same instance for every decision with that reason. */
    private final Explanations explanations = new Explanations();
    /** Each of those tails as UTF-8, found by instance. */
    private final Map<String, byte[]> tails = new IdentityHashMap<>();
    /** dtype, encoding and format of each stored format, and each resident format, as UTF-8 text for the plan digest. */
    private final Map<Format, byte[][]> planStoredTexts = new HashMap<>();
    private final Map<Format, byte[]> planResidentTexts = new HashMap<>();
    /** Where {@link #piece} writes, reused for each of the layout's tensors. */
    private final ByteArrayOutputStream scratch = new ByteArrayOutputStream(512);
    private BinaryEncoder encoder;

    /**
     * What a decision says of its load rather than its tensor, encoded once per load: the fields before the tensor's
     * (loadId through profileName, after the decision's id) and after them (resolverVersion through planDigest).
     */
    record Frame(byte[] loadFields, byte[] provenanceFields, byte[] planDigestField) {
        /**
         * A decision's record value: its id, then the load's fields around the tensor's ({@link #tensorFields}), copied
         * once into the record.
         *
         * @param decisionId a UUID's 36 characters, as every decision id is (LoadResolution's DecisionIds), so its length
         *                   prefix is one known byte
         */
        byte[] encode(byte[] decisionId, byte[] tensorFields) {
            if (decisionId.length != ID_LENGTH) {
                throw new IllegalArgumentException("a decision id is " + ID_LENGTH + " characters, not " + decisionId.length);
            }
            return SERDE.concatenate(ID_PREFIX, decisionId, loadFields, tensorFields, provenanceFields, planDigestField);
        }
    }

    /** The load's frame: every field of its decisions but the id and the tensor's own. */
    static Frame frame(ModelLoaded event, String loadId, String resolverVersion, String policyDigest, Provenance source, long decidedAt,
                       String planDigest) {
        byte[] loadFields = fragment(out -> {
            out.writeString(loadId);
            out.writeLong(event.getOccurredAt().toEpochMilli());
            out.writeString(event.getDeployment().getId());
            out.writeString(event.getDeployment().getCluster());
            out.writeString(event.getDeployment().getHost());
            out.writeString(event.getRelease());
            out.writeString(event.getModel().getId());
            out.writeString(event.getModel().getName());
            String sha256 = event.getModel().getSha256();
            if (sha256 == null) {
                out.writeIndex(0);
                out.writeNull();
            } else {
                out.writeIndex(1);
                out.writeString(sha256);
            }
            out.writeString(event.getPlatform().getName());
            out.writeString(event.getProfile().getName());
        });
        byte[] provenanceFields = fragment(out -> {
            out.writeString(resolverVersion);
            out.writeString(policyDigest);
            out.writeString(source.topic());
            out.writeInt(source.partition());
            out.writeLong(source.offset());
            out.writeLong(decidedAt);
        });
        byte[] planDigestField = fragment(out -> {
            out.writeIndex(1);
            out.writeString(planDigest);
        });
        return new Frame(loadFields, provenanceFields, planDigestField);
    }

    /**
     * Feeds one tensor's decision to the load's plan digest, with the very values {@link #encode} writes (see
     * {@link PlanDigest#COLUMNS}); call it for every tensor, in order, before the first {@link #encode}.
     */
    void digest(PlanDigest plan, byte[] name, PlanTensor tensor, boolean estimated, AllocationDecision decision, int index) {
        byte[][] stored = planStoredTexts.computeIfAbsent(tensor.format(), format -> new byte[][]{utf8(format.dtype().name()),
                utf8(format.encoding().spec()), utf8(format.toString())});
        byte[] resident = planResidentTexts.computeIfAbsent(decision.residentFormat(), format -> utf8(format.toString()));
        byte[] tailBytes = tails.computeIfAbsent(explanations.tailOf(decision), tail -> tail.getBytes(StandardCharsets.UTF_8));
        plan.integer(index).text(name).text(stored[0]).text(stored[1]).text(stored[2]).integer(tensor.elementCount()).integer(tensor.bytes())
                .bool(estimated).text(resident).integer(decision.residentBytes()).text(decision.domain().name()).text(decision.scope().name())
                .bool(decision.mappingRequested()).text(decision.primaryReason().name()).text(decision.placement().name());
        List<ReasonCode> blockers = decision.mappingBlockers();
        plan.text(blockers.isEmpty() ? "" : String.join(",", blockers.stream().map(ReasonCode::name).toList()));
        plan.text(name, tailBytes);
        plan.endTensor();
    }

    /**
     * The fields a decision has of its tensor alone, tensorName through reason: the same in every load of the layout.
     *
     * @param name      the tensor's name as UTF-8 (the decision id is computed from the same bytes)
     * @param estimated the producer estimated the tensor's stored bytes (TensorInfo.sizeEstimated)
     */
    byte[] tensorFields(byte[] name, PlanTensor tensor, boolean estimated, AllocationDecision decision, int index, int count) {
        byte[] storedFormat = storedFormats.computeIfAbsent(tensor.format(), DecisionEncoder::storedFormat);
        byte[] residentFormat = residentFormats.computeIfAbsent(decision.residentFormat(), format -> fragment(out -> out.writeString(format.toString())));
        byte[] tailBytes = tails.computeIfAbsent(explanations.tailOf(decision), tail -> tail.getBytes(StandardCharsets.UTF_8));
        return piece(out -> {
            writeUtf8(out, name);
            out.writeInt(index);
            out.writeInt(count);
            out.writeFixed(storedFormat);
            out.writeLong(tensor.elementCount());
            out.writeLong(tensor.bytes());
            out.writeBoolean(estimated);
            out.writeFixed(residentFormat);
            out.writeLong(decision.residentBytes());
            // The event enums list the core enums' symbols in the same order (LoadResolutionTest checks).
            out.writeEnum(decision.domain().ordinal());
            out.writeEnum(decision.scope().ordinal());
            out.writeBoolean(decision.spec().mutable());
            out.writeInt(decision.spec().alignment());
            out.writeBoolean(decision.mappingRequested());
            out.writeEnum(decision.primaryReason().ordinal());
            out.writeEnum(decision.placement().ordinal());
            List<ReasonCode> blockers = decision.mappingBlockers();
            out.writeArrayStart();
            out.setItemCount(blockers.size());
            for (ReasonCode blocker : blockers) {
                out.startItem();
                out.writeEnum(blocker.ordinal());
            }
            out.writeArrayEnd();
            out.writeInt(name.length + tailBytes.length);
            out.writeFixed(name);
            out.writeFixed(tailBytes);
        });
    }

    private static byte[] storedFormat(Format format) {
        return fragment(out -> {
            out.writeString(format.dtype().name());
            out.writeString(format.encoding().spec());
            out.writeString(format.toString());
        });
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static void writeUtf8(Encoder out, byte[] utf8) throws IOException {
        out.writeInt(utf8.length);
        out.writeFixed(utf8);
    }

    /**
     * A layout's tensor fields, one per tensor (146 for a Llama load): through one buffered encoder and one scratch
     * buffer, reused, since the unbuffered encoder of {@link #fragment} writes a varint's bytes one call at a time.
     */
    private byte[] piece(EventSerde.Body fields) {
        scratch.reset();
        try {
            encoder = EncoderFactory.get().binaryEncoder(scratch, encoder);
            fields.writeTo(encoder);
            encoder.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("a ByteArrayOutputStream cannot fail", e);
        }
        return scratch.toByteArray();
    }

    /**
     * A run of fields encoded on their own, to be copied into records later: a handful per load, so Avro's unbuffered
     * encoder, which allocates no buffer, is the cheaper one here.
     */
    private static byte[] fragment(EventSerde.Body fields) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
        try {
            fields.writeTo(EncoderFactory.get().directBinaryEncoder(bytes, null));
        } catch (IOException e) {
            throw new UncheckedIOException("a ByteArrayOutputStream cannot fail", e);
        }
        return bytes.toByteArray();
    }
}
