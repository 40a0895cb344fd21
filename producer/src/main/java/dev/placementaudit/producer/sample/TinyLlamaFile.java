package dev.placementaudit.producer.sample;

import dev.placementaudit.core.format.GgmlType;

import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;

/**
 * A small llama that llama.cpp loads and runs: GGUF v3 with every key llama.cpp's llama architecture needs, an SPM
 * vocabulary of its own (the three special tokens, the 256 byte tokens SPM falls back on, and generated word pieces),
 * and seeded weights in one of the encodings llama.cpp places differently (Q4_0 and Q4_K are repacked for AVX2 kernels,
 * Q8_0 and F16 are not). Norms are F32 ones. Tensors are written in the order llama.cpp's converter writes them
 * (embedding, blocks, final norm, output), which decides the span of the file llama.cpp maps as one buffer.
 */
public final class TinyLlamaFile {
    /** The weight encodings a tiny llama can be written in. */
    public static final Set<GgmlType> TYPES = Set.of(GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q8_0, GgmlType.F16);
    public static final int VOCAB = 1024;

    /** A llama's dimensions: width, feed-forward width, layers, heads. */
    public record Size(int embd, int ff, int layers, int heads) {
    }

    /** 2 layers, 256 wide: about 1 MB in Q4_0, loaded in a blink. */
    public static final Size TINY = new Size(256, 512, 2, 4);
    /** 12 layers, 1,024 wide: about 110 MB in Q4_0, for timing a load that is not all start-up. */
    public static final Size SMALL = new Size(1024, 4096, 12, 8);
    private static final int ALIGNMENT = 32;
    private static final int GGUF_MAGIC = 0x46554747;

    /** One tensor as written: name, ggml dims (innermost first), type. */
    public record Tensor(String name, long[] dims, GgmlType type) {
        public long elements() {
            long n = 1;
            for (long d : dims) {
                n *= d;
            }
            return n;
        }

        public long bytes() {
            return type.bytesFor(elements());
        }
    }

    private TinyLlamaFile() {
    }

    /** The tensors of the tiny llama with its matrices in {@code type}, in file order. */
    public static List<Tensor> layout(GgmlType type) {
        return layout(TINY, type);
    }

    /** The tensors of a llama of {@code size} with its matrices in {@code type}, in file order. */
    public static List<Tensor> layout(Size size, GgmlType type) {
        long embd = size.embd();
        long ff = size.ff();
        if (!TYPES.contains(type)) {
            throw new IllegalArgumentException("a tiny llama is written in " + TYPES + ", not " + type);
        }
        List<Tensor> tensors = new ArrayList<>();
        tensors.add(new Tensor("token_embd.weight", new long[]{embd, VOCAB}, type));
        for (int i = 0; i < size.layers(); i++) {
            String b = "blk." + i + ".";
            tensors.add(new Tensor(b + "attn_norm.weight", new long[]{embd}, GgmlType.F32));
            tensors.add(new Tensor(b + "attn_q.weight", new long[]{embd, embd}, type));
            tensors.add(new Tensor(b + "attn_k.weight", new long[]{embd, embd}, type));
            tensors.add(new Tensor(b + "attn_v.weight", new long[]{embd, embd}, type));
            tensors.add(new Tensor(b + "attn_output.weight", new long[]{embd, embd}, type));
            tensors.add(new Tensor(b + "ffn_norm.weight", new long[]{embd}, GgmlType.F32));
            tensors.add(new Tensor(b + "ffn_gate.weight", new long[]{embd, ff}, type));
            tensors.add(new Tensor(b + "ffn_down.weight", new long[]{ff, embd}, type));
            tensors.add(new Tensor(b + "ffn_up.weight", new long[]{embd, ff}, type));
        }
        tensors.add(new Tensor("output_norm.weight", new long[]{embd}, GgmlType.F32));
        tensors.add(new Tensor("output.weight", new long[]{embd, VOCAB}, type));
        return tensors;
    }

    /** Writes the model; the same {@code seed} writes the same bytes. @return the file's size */
    public static long write(GgmlType type, long seed, Path file) {
        return write(TINY, type, seed, file);
    }

    /** Writes a llama of {@code size}; the same {@code seed} writes the same bytes. @return the file's size */
    public static long write(Size size, GgmlType type, long seed, Path file) {
        List<Tensor> tensors = layout(size, type);
        Out header = new Out();
        header.u32(GGUF_MAGIC).u32(3).u64(tensors.size()).u64(20);
        header.string("general.architecture").u32(8).string("llama");
        header.string("general.name").u32(8).string((size == TINY ? "tiny" : size.layers() + "-layer") + "-llama-" + type.name().toLowerCase());
        header.string("general.alignment").u32(4).u32(ALIGNMENT);
        header.string("llama.context_length").u32(4).u32(256);
        header.string("llama.embedding_length").u32(4).u32(size.embd());
        header.string("llama.block_count").u32(4).u32(size.layers());
        header.string("llama.feed_forward_length").u32(4).u32(size.ff());
        header.string("llama.attention.head_count").u32(4).u32(size.heads());
        header.string("llama.attention.head_count_kv").u32(4).u32(size.heads());
        header.string("llama.rope.dimension_count").u32(4).u32(size.embd() / size.heads());
        header.string("llama.attention.layer_norm_rms_epsilon").u32(6).f32(1e-5f);
        header.string("llama.vocab_size").u32(4).u32(VOCAB);
        header.string("tokenizer.ggml.model").u32(8).string("llama");
        List<String> tokens = vocabulary();
        header.string("tokenizer.ggml.tokens").u32(9).u32(8).u64(tokens.size());
        tokens.forEach(header::string);
        header.string("tokenizer.ggml.scores").u32(9).u32(6).u64(tokens.size());
        for (int i = 0; i < tokens.size(); i++) {
            header.f32(i < 259 ? 0f : -i);
        }
        header.string("tokenizer.ggml.token_type").u32(9).u32(5).u64(tokens.size());
        for (int i = 0; i < tokens.size(); i++) {
            header.u32(i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1);
        }
        header.string("tokenizer.ggml.unknown_token_id").u32(4).u32(0);
        header.string("tokenizer.ggml.bos_token_id").u32(4).u32(1);
        header.string("tokenizer.ggml.eos_token_id").u32(4).u32(2);
        header.string("tokenizer.ggml.add_bos_token").u32(7).u8(1);
        long offset = 0;
        for (Tensor t : tensors) {
            header.string(t.name()).u32(t.dims().length);
            for (long d : t.dims()) {
                header.u64(d);
            }
            header.u32(t.type().id()).u64(offset);
            offset = aligned(offset + t.bytes());
        }
        Random random = new Random(seed);
        try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(file), 1 << 16)) {
            byte[] head = header.bytes();
            out.write(head);
            long written = head.length;
            written += pad(out, written);
            for (Tensor t : tensors) {
                byte[] data = weights(t, random);
                out.write(data);
                written += data.length;
                written += pad(out, written);
            }
            return written;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    /** Where the data section starts for a header of {@code headerBytes}, and where each tensor starts in it: GGUF's alignment. */
    public static long aligned(long offset) {
        return (offset + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    }

    private static int pad(OutputStream out, long written) throws IOException {
        int gap = (int) (aligned(written) - written);
        out.write(new byte[gap]);
        return gap;
    }

    /** The SPM vocabulary: unknown, begin, end, the 256 byte tokens, then word pieces "▁a".."▁zz..." to {@link #VOCAB}. */
    static List<String> vocabulary() {
        List<String> tokens = new ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        for (int b = 0; b < 256; b++) {
            tokens.add(String.format("<0x%02X>", b));
        }
        for (int i = 0; tokens.size() < VOCAB; i++) {
            StringBuilder word = new StringBuilder();
            int n = i;
            do {
                word.insert(0, (char) ('a' + n % 26));
                n = n / 26 - 1;
            } while (n >= 0);
            tokens.add("\u2581" + word);
        }
        return tokens;
    }

    /** Seeded weights: small scales so activations stay finite; norms are ones. */
    private static byte[] weights(Tensor t, Random random) {
        ByteBuffer data = ByteBuffer.allocate((int) t.bytes()).order(ByteOrder.LITTLE_ENDIAN);
        long elements = t.elements();
        switch (t.type()) {
            case F32 -> {
                for (long i = 0; i < elements; i++) {
                    data.putFloat(1f);
                }
            }
            case F16 -> {
                for (long i = 0; i < elements; i++) {
                    data.putShort(half((float) (random.nextGaussian() * 0.02)));
                }
            }
            case Q8_0 -> {
                for (long b = 0; b < elements / 32; b++) {
                    data.putShort(half(0.02f / 127));
                    byte[] q = new byte[32];
                    random.nextBytes(q);
                    data.put(q);
                }
            }
            case Q4_0 -> {
                for (long b = 0; b < elements / 32; b++) {
                    data.putShort(half(0.02f / 8));
                    byte[] q = new byte[16];
                    random.nextBytes(q);
                    data.put(q);
                }
            }
            case Q4_K -> {
                for (long b = 0; b < elements / 256; b++) {
                    data.putShort(half(0.02f / 8 / 63));
                    data.putShort(half(0.02f / 63));
                    byte[] scales = new byte[12];
                    for (int i = 0; i < scales.length; i++) {
                        scales[i] = (byte) (random.nextInt(64) | (i >= 8 ? random.nextInt(4) << 6 : 0));
                    }
                    data.put(scales);
                    byte[] q = new byte[128];
                    random.nextBytes(q);
                    data.put(q);
                }
            }
            default -> throw new IllegalStateException("no weights for " + t.type());
        }
        return data.array();
    }

    /** IEEE 754 half precision of a normal float (the weights' scales): round to nearest. */
    static short half(float value) {
        int bits = Float.floatToIntBits(value);
        int sign = (bits >>> 16) & 0x8000;
        int exponent = ((bits >>> 23) & 0xff) - 127 + 15;
        int mantissa = bits & 0x7fffff;
        if (exponent <= 0) {
            return (short) sign;
        }
        int rounded = (exponent << 10 | mantissa >>> 13) + ((mantissa >>> 12) & 1);
        return (short) (sign | rounded);
    }

    private static final class Out {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private final ByteBuffer scratch = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);

        Out u8(int v) {
            bytes.write(v);
            return this;
        }

        Out u32(long v) {
            bytes.write(scratch.clear().putInt((int) v).array(), 0, 4);
            return this;
        }

        Out f32(float v) {
            bytes.write(scratch.clear().putFloat(v).array(), 0, 4);
            return this;
        }

        Out u64(long v) {
            bytes.write(scratch.clear().putLong(v).array(), 0, 8);
            return this;
        }

        Out string(String s) {
            byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
            u64(utf8.length);
            bytes.writeBytes(utf8);
            return this;
        }

        byte[] bytes() {
            return bytes.toByteArray();
        }
    }
}
