package dev.placementaudit.producer.simulate;

import dev.placementaudit.core.format.GgmlType;
import dev.placementaudit.events.FileFormat;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.model.StoredTensor;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Tensor layouts of real model families, as their GGUF files lay them out (ggml shape order {@code [in, out]}),
 * so simulated fleets carry realistic tensor counts, encodings and sizes. No weights: placement needs none.
 */
public final class ModelCatalog {
    /** Llama 3.2 1B as Q4_K_M: 16 blocks, tied embeddings, Q6_K for V and FFN-down. 147 tensors, ~0.8 GB. */
    public static final Archetype LLAMA_3_2_1B_Q4_K_M = new Archetype("llama-3.2-1b-q4km", "Llama 3.2 1B Instruct Q4_K_M",
            16, 2048, 8192, 512, 128_256, GgmlType.Q4_K, GgmlType.Q6_K, GgmlType.Q6_K, false);
    /** Qwen 2.5 0.5B as Q8_0, with q/k/v biases. */
    public static final Archetype QWEN_2_5_0_5B_Q8_0 = new Archetype("qwen2.5-0.5b-q8_0", "Qwen2.5 0.5B Instruct Q8_0",
            24, 896, 4864, 128, 151_936, GgmlType.Q8_0, GgmlType.Q8_0, GgmlType.Q8_0, true);
    /** A BitNet-style ternary model: TQ2_0 blocks no loader serves from a mapping yet. */
    public static final Archetype BITNET_2B_TQ2_0 = new Archetype("bitnet-2b-tq2_0", "BitNet b1.58 2B TQ2_0",
            30, 2560, 6912, 640, 128_256, GgmlType.TQ2_0, GgmlType.TQ2_0, GgmlType.F16, false);
    /** A small F16 model: dense half precision is never mapped-servable (only Dense(4B) is). */
    public static final Archetype SMOLLM_360M_F16 = new Archetype("smollm2-360m-f16", "SmolLM2 360M F16",
            32, 960, 2560, 320, 49_152, GgmlType.F16, GgmlType.F16, GgmlType.F16, false);

    public static final List<Archetype> ALL = List.of(LLAMA_3_2_1B_Q4_K_M, QWEN_2_5_0_5B_Q8_0, BITNET_2B_TQ2_0, SMOLLM_360M_F16);

    private ModelCatalog() {
    }

    public static Archetype byId(String id) {
        return ALL.stream().filter(a -> a.id().equals(id)).findFirst().orElseThrow(() -> new IllegalArgumentException(
                "unknown model '" + id + "'; expected one of " + ALL.stream().map(Archetype::id).toList()));
    }

    /**
     * @param kvWidth     width of K and V projections (kv heads x head dim)
     * @param bulk        encoding of most projection weights
     * @param sensitive   encoding of V and FFN-down, which K-quant mixes keep at higher precision
     * @param embedding   encoding of the token embedding
     * @param qkvBias     whether q/k/v carry F32 biases (Qwen)
     */
    /** One tensor of a layout, with its ggml dims ({@code [in, out]}, fastest-varying first). */
    public record LayoutTensor(String name, GgmlType type, long... dims) {
        /** GGUF's default alignment of each tensor's data. */
        public static final int ALIGNMENT = 32;

        public long elementCount() {
            long elements = 1;
            for (long d : dims) {
                elements = Math.multiplyExact(elements, d);
            }
            return elements;
        }

        public long bytes() {
            return type.bytesFor(elementCount());
        }

        public List<Long> shape() {
            List<Long> shape = new ArrayList<>();
            for (long d : dims) {
                shape.add(d);
            }
            return shape;
        }

        public static long aligned(long offset) {
            return (offset + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
        }
    }

    public record Archetype(String id, String displayName, int blocks, int embedding, int ffn, int kvWidth, int vocab,
                            GgmlType bulk, GgmlType sensitive, GgmlType embeddingType, boolean qkvBias) {

        public StoredModel model() {
            List<StoredTensor> tensors = new ArrayList<>();
            long offset = 0;
            for (LayoutTensor t : layout()) {
                long bytes = t.bytes();
                tensors.add(new StoredTensor(t.name(), t.type().toFormat(bytes), t.shape(), t.elementCount(), bytes, OptionalLong.of(offset)));
                offset = LayoutTensor.aligned(offset + bytes);
            }
            return new StoredModel(displayName, FileFormat.GGUF, offset, Optional.of(syntheticSha256()),
                    Map.of("general.architecture", "llama", "general.name", displayName), tensors);
        }

        /** Every tensor as the model's GGUF file lists it, in file order. */
        public List<LayoutTensor> layout() {
            List<LayoutTensor> tensors = new ArrayList<>();
            tensors.add(new LayoutTensor("token_embd.weight", embeddingType, embedding, vocab));
            for (int b = 0; b < blocks; b++) {
                String p = "blk." + b + ".";
                tensors.add(new LayoutTensor(p + "attn_norm.weight", GgmlType.F32, embedding));
                tensors.add(new LayoutTensor(p + "attn_q.weight", bulk, embedding, embedding));
                tensors.add(new LayoutTensor(p + "attn_k.weight", bulk, embedding, kvWidth));
                tensors.add(new LayoutTensor(p + "attn_v.weight", sensitive, embedding, kvWidth));
                if (qkvBias) {
                    tensors.add(new LayoutTensor(p + "attn_q.bias", GgmlType.F32, embedding));
                    tensors.add(new LayoutTensor(p + "attn_k.bias", GgmlType.F32, kvWidth));
                    tensors.add(new LayoutTensor(p + "attn_v.bias", GgmlType.F32, kvWidth));
                }
                tensors.add(new LayoutTensor(p + "attn_output.weight", bulk, embedding, embedding));
                tensors.add(new LayoutTensor(p + "ffn_norm.weight", GgmlType.F32, embedding));
                tensors.add(new LayoutTensor(p + "ffn_gate.weight", bulk, embedding, ffn));
                tensors.add(new LayoutTensor(p + "ffn_up.weight", bulk, embedding, ffn));
                tensors.add(new LayoutTensor(p + "ffn_down.weight", sensitive, ffn, embedding));
            }
            tensors.add(new LayoutTensor("output_norm.weight", GgmlType.F32, embedding));
            return tensors;
        }

        /** Stable per archetype, so simulated releases of the same model share a digest. */
        private String syntheticSha256() {
            try {
                return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(id.getBytes(StandardCharsets.UTF_8)));
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
