package dev.placementaudit.schemas;

import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.Encoder;
import org.apache.avro.util.Utf8;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Avro's binary encoder, except that a string which is the very same {@code String} instance as one of the last
 * few written at the same position of earlier records is written from the UTF-8 bytes kept from then.
 *
 * <p>Why: the worker writes one AllocationDecided per tensor, and 13 of its 20 strings (load id, deployment, release,
 * model, policy digest, ...) are the same instances in all of a load's decisions. The two formats take a handful
 * of values that alternate from tensor to tensor (114 changes in a Llama 3.2 1B load's 146 decisions), hence
 * several instances kept per position, not only the last. Avro converts every string afresh, char by char; that
 * was 40% of encoding. Strings are immutable, so the same instance always has the same bytes: a hit can never
 * write stale text. An instance met for the first time (most are never met again: ids, names, explanations, which
 * name their tensor) is only remembered, and encoded into a reused buffer rather than a new array: {@code getBytes}
 * allocates three bytes per char for a string with any non-Latin-1 char, as every explanation has (an em dash), which
 * was a fifth of the worker's garbage. Its bytes are kept when the instance comes back. Output is byte for byte what
 * {@link BinaryEncoder} writes, malformed surrogates included (EventSerdeTest compares whole loads and odd text). One
 * per thread; not thread-safe.
 */
final class RepeatedStringEncoder extends Encoder {
    /** Records with more strings than this encode the rest as usual; AllocationDecided has 20. */
    private static final int POSITIONS = 64;
    /** Instances kept per position, replaced round-robin; a power of two. */
    static final int WAYS = 8;

    private final BinaryEncoder out;
    private final String[] strings = new String[POSITIONS * WAYS];
    private final byte[][] utf8 = new byte[POSITIONS * WAYS][];
    private final byte[] victim = new byte[POSITIONS];
    private int position;
    private byte[] scratch = new byte[1024];

    RepeatedStringEncoder(BinaryEncoder out) {
        this.out = out;
    }

    /** Called before each record: its strings are matched against earlier records', position by position. */
    void startRecord() {
        position = 0;
    }

    @Override
    public void writeString(String string) throws IOException {
        int at = position++;
        if (at >= POSITIONS) {
            out.writeString(string);
            return;
        }
        int first = at * WAYS;
        int slot = slotOf(first, string);
        if (slot < 0) {
            slot = first + victim[at];
            victim[at] = (byte) ((victim[at] + 1) & (WAYS - 1));
            strings[slot] = string;
            utf8[slot] = null;
            writeOnce(string);
            return;
        }
        byte[] bytes = utf8[slot];
        if (bytes == null) {
            bytes = string.getBytes(StandardCharsets.UTF_8);
            utf8[slot] = bytes;
        }
        out.writeInt(bytes.length);
        out.writeFixed(bytes, 0, bytes.length);
    }

    private int slotOf(int first, String string) {
        for (int slot = first; slot < first + WAYS; slot++) {
            if (strings[slot] == string) {
                return slot;
            }
        }
        return -1;
    }

    /**
     * UTF-8 as {@code String.getBytes(UTF_8)} produces it, into the reused buffer: a surrogate pair is one 4-byte
     * code point, and a surrogate without its other half becomes {@code '?'}, as the JDK replaces it.
     */
    private void writeOnce(String string) throws IOException {
        int length = string.length();
        if (scratch.length < length * 3) {
            scratch = new byte[Math.max(length * 3, scratch.length * 2)];
        }
        byte[] bytes = scratch;
        int n = 0;
        for (int i = 0; i < length; i++) {
            char c = string.charAt(i);
            if (c < 0x80) {
                bytes[n++] = (byte) c;
            } else if (c < 0x800) {
                bytes[n++] = (byte) (0xC0 | c >> 6);
                bytes[n++] = (byte) (0x80 | c & 0x3F);
            } else if (!Character.isSurrogate(c)) {
                bytes[n++] = (byte) (0xE0 | c >> 12);
                bytes[n++] = (byte) (0x80 | c >> 6 & 0x3F);
                bytes[n++] = (byte) (0x80 | c & 0x3F);
            } else if (Character.isHighSurrogate(c) && i + 1 < length && Character.isLowSurrogate(string.charAt(i + 1))) {
                int codePoint = Character.toCodePoint(c, string.charAt(++i));
                bytes[n++] = (byte) (0xF0 | codePoint >> 18);
                bytes[n++] = (byte) (0x80 | codePoint >> 12 & 0x3F);
                bytes[n++] = (byte) (0x80 | codePoint >> 6 & 0x3F);
                bytes[n++] = (byte) (0x80 | codePoint & 0x3F);
            } else {
                bytes[n++] = '?';
            }
        }
        out.writeInt(n);
        out.writeFixed(bytes, 0, n);
    }

    @Override
    public void writeString(Utf8 utf8) throws IOException {
        position++;
        out.writeString(utf8);
    }

    @Override
    public void writeNull() throws IOException {
        out.writeNull();
    }

    @Override
    public void writeBoolean(boolean b) throws IOException {
        out.writeBoolean(b);
    }

    @Override
    public void writeInt(int n) throws IOException {
        out.writeInt(n);
    }

    @Override
    public void writeLong(long n) throws IOException {
        out.writeLong(n);
    }

    @Override
    public void writeFloat(float f) throws IOException {
        out.writeFloat(f);
    }

    @Override
    public void writeDouble(double d) throws IOException {
        out.writeDouble(d);
    }

    @Override
    public void writeBytes(ByteBuffer bytes) throws IOException {
        out.writeBytes(bytes);
    }

    @Override
    public void writeBytes(byte[] bytes, int start, int len) throws IOException {
        out.writeBytes(bytes, start, len);
    }

    @Override
    public void writeFixed(byte[] bytes, int start, int len) throws IOException {
        out.writeFixed(bytes, start, len);
    }

    @Override
    public void writeEnum(int e) throws IOException {
        out.writeEnum(e);
    }

    @Override
    public void writeArrayStart() throws IOException {
        out.writeArrayStart();
    }

    @Override
    public void setItemCount(long itemCount) throws IOException {
        out.setItemCount(itemCount);
    }

    @Override
    public void startItem() throws IOException {
        out.startItem();
    }

    @Override
    public void writeArrayEnd() throws IOException {
        out.writeArrayEnd();
    }

    @Override
    public void writeMapStart() throws IOException {
        out.writeMapStart();
    }

    @Override
    public void writeMapEnd() throws IOException {
        out.writeMapEnd();
    }

    @Override
    public void writeIndex(int unionIndex) throws IOException {
        out.writeIndex(unionIndex);
    }

    @Override
    public void flush() throws IOException {
        out.flush();
    }
}
