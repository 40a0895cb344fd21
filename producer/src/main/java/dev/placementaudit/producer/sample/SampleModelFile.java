package dev.placementaudit.producer.sample;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.placementaudit.producer.simulate.ModelCatalog.Archetype;
import dev.placementaudit.producer.simulate.ModelCatalog.LayoutTensor;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Writes a model file with a real model's tensor layout and no weights, so that {@code explain} and {@code publish}
 * can be tried on a closed network. The header is complete and valid; the tensor data is a sparse hole (the file
 * system stores no blocks for it, so a "0.8 GB" file takes a few KB) that reads as zeros. Placement needs only the
 * header: names, encodings, shapes and offsets.
 */
public final class SampleModelFile {
    /** How an archetype is laid out: GGUF keeps its quantized encodings, safetensors is the BF16 checkpoint it came from. */
    public enum Format { GGUF, SAFETENSORS }

    private static final int GGUF_MAGIC = 0x46554747;
    private static final int GGUF_VERSION = 3;
    private static final int GGUF_UINT32 = 4;
    private static final int GGUF_STRING = 8;
    private static final Pattern BLOCK = Pattern.compile("blk\\.(\\d+)\\.(\\w+)\\.(weight|bias)");

    private SampleModelFile() {
    }

    /** @return the file's size in bytes */
    public static long write(Archetype model, Format format, Path file) {
        try {
            return format == Format.GGUF ? writeGguf(model, file) : writeSafetensors(model, file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    /** GGUF v3 as llama.cpp writes it: header, key-values, tensor infos, padding to the alignment, aligned tensor data. */
    static long writeGguf(Archetype model, Path file) throws IOException {
        List<LayoutTensor> tensors = model.layout();
        Out header = new Out();
        header.u32(GGUF_MAGIC).u32(GGUF_VERSION).u64(tensors.size()).u64(3);
        header.string("general.architecture").u32(GGUF_STRING).string("llama");
        header.string("general.name").u32(GGUF_STRING).string(model.displayName());
        header.string("general.alignment").u32(GGUF_UINT32).u32(LayoutTensor.ALIGNMENT);
        long offset = 0;
        long end = 0;
        for (LayoutTensor t : tensors) {
            header.string(t.name()).u32(t.dims().length);
            for (long d : t.dims()) {
                header.u64(d);
            }
            header.u32(t.type().id()).u64(offset);
            end = offset + t.bytes();
            offset = LayoutTensor.aligned(end);
        }
        return writeSparse(file, header.bytes(), LayoutTensor.aligned(header.size()) + end);
    }

    /**
     * safetensors as Hugging Face writes a checkpoint: an 8-byte little-endian header length, the JSON header (padded
     * with spaces to 8 bytes), then the tensors back to back. Names are Hugging Face's, shapes outermost first.
     */
    static long writeSafetensors(Archetype model, Path file) throws IOException {
        ObjectMapper json = new ObjectMapper();
        ObjectNode header = json.createObjectNode();
        header.putObject("__metadata__").put("format", "pt").put("name", model.displayName());
        long offset = 0;
        for (LayoutTensor t : model.layout()) {
            long bytes = Math.multiplyExact(t.elementCount(), 2L);
            ObjectNode entry = header.putObject(huggingFaceName(t.name()));
            entry.put("dtype", "BF16");
            var shape = entry.putArray("shape");
            for (int i = t.dims().length - 1; i >= 0; i--) {
                shape.add(t.dims()[i]);
            }
            entry.putArray("data_offsets").add(offset).add(offset + bytes);
            offset += bytes;
        }
        byte[] text = json.writeValueAsBytes(header);
        int padded = (text.length + 7) / 8 * 8;
        Out out = new Out();
        out.u64(padded);
        out.raw(text);
        out.raw(" ".repeat(padded - text.length).getBytes(StandardCharsets.US_ASCII));
        return writeSparse(file, out.bytes(), 8L + padded + offset);
    }

    /** llama.cpp's tensor names back to the Hugging Face names its converter read. */
    static String huggingFaceName(String gguf) {
        switch (gguf) {
            case "token_embd.weight":
                return "model.embed_tokens.weight";
            case "output_norm.weight":
                return "model.norm.weight";
            default:
                break;
        }
        Matcher m = BLOCK.matcher(gguf);
        if (!m.matches()) {
            return gguf;
        }
        String layer = "model.layers." + m.group(1) + ".";
        String part = switch (m.group(2)) {
            case "attn_norm" -> "input_layernorm";
            case "attn_q" -> "self_attn.q_proj";
            case "attn_k" -> "self_attn.k_proj";
            case "attn_v" -> "self_attn.v_proj";
            case "attn_output" -> "self_attn.o_proj";
            case "ffn_norm" -> "post_attention_layernorm";
            case "ffn_gate" -> "mlp.gate_proj";
            case "ffn_up" -> "mlp.up_proj";
            case "ffn_down" -> "mlp.down_proj";
            default -> m.group(2);
        };
        return layer + part + "." + m.group(3);
    }

    private static long writeSparse(Path file, byte[] header, long size) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(0);
            raf.write(header);
            raf.setLength(size);
        }
        return size;
    }

    /** Little-endian writer for the few field types the headers use. */
    private static final class Out {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

        Out u32(long v) {
            bytes.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt((int) v).array());
            return this;
        }

        Out u64(long v) {
            bytes.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array());
            return this;
        }

        Out string(String s) {
            byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
            return u64(utf8.length).raw(utf8);
        }

        Out raw(byte[] b) {
            bytes.writeBytes(b);
            return this;
        }

        int size() {
            return bytes.size();
        }

        byte[] bytes() {
            return bytes.toByteArray();
        }
    }
}
