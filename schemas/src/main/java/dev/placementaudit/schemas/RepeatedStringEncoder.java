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
 * write stale text, and a miss (any other string: ids, names, explanations, which name their tensor) is encoded
 * as usual. Output is byte for byte what {@link BinaryEncoder} writes (EventSerdeTest compares whole loads). One
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

    RepeatedStringEncoder(BinaryEncoder out) {
        this.out = out;
    }

    /** Called before each record: its strings are matched against the previous record's, position by position. */
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
        byte[] bytes = cached(at * WAYS, string);
        if (bytes == null) {
            bytes = string.getBytes(StandardCharsets.UTF_8);
            int slot = at * WAYS + victim[at];
            victim[at] = (byte) ((victim[at] + 1) & (WAYS - 1));
            strings[slot] = string;
            utf8[slot] = bytes;
        }
        out.writeInt(bytes.length);
        out.writeFixed(bytes, 0, bytes.length);
    }

    private byte[] cached(int first, String string) {
        for (int slot = first; slot < first + WAYS; slot++) {
            if (strings[slot] == string) {
                return utf8[slot];
            }
        }
        return null;
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
