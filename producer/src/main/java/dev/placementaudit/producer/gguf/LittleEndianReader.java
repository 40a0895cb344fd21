package dev.placementaudit.producer.gguf;

import dev.placementaudit.producer.model.ModelFileException;

import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Sequential little-endian reads with the byte position always known, for error messages that point at the byte. */
final class LittleEndianReader implements AutoCloseable {
    private final Path file;
    private final InputStream in;
    private long position;

    LittleEndianReader(Path file) throws IOException {
        this.file = file;
        this.in = new BufferedInputStream(Files.newInputStream(file), 1 << 16);
    }

    long position() {
        return position;
    }

    int u8() throws IOException {
        int b = in.read();
        if (b < 0) {
            throw truncated(1);
        }
        position++;
        return b;
    }

    long u32() throws IOException {
        return bytes(4) & 0xFFFF_FFFFL;
    }

    long u64() throws IOException {
        return bytes(8);
    }

    /** A length-prefixed UTF-8 string, refused beyond {@code maxBytes} so a corrupt length cannot exhaust memory. */
    String string(long maxBytes, String what) throws IOException {
        long at = position;
        long length = u64();
        if (length < 0 || length > maxBytes) {
            throw error(at, what + " length " + Long.toUnsignedString(length) + " exceeds " + maxBytes + " bytes");
        }
        byte[] data = in.readNBytes((int) length);
        if (data.length < length) {
            throw error(position + data.length, "file ends inside " + what + " (" + length + " bytes expected)");
        }
        position += length;
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(data)).toString();
        } catch (CharacterCodingException e) {
            throw error(at + 8, what + " is not valid UTF-8");
        }
    }

    void skip(long count) throws IOException {
        long remaining = count;
        while (remaining > 0) {
            long skipped = in.skip(remaining);
            if (skipped <= 0) {
                if (in.read() < 0) {
                    throw truncated(remaining);
                }
                skipped = 1;
            }
            remaining -= skipped;
            position += skipped;
        }
    }

    ModelFileException error(long at, String problem) {
        return new ModelFileException(file, at, problem);
    }

    private long bytes(int count) throws IOException {
        long value = 0;
        for (int i = 0; i < count; i++) {
            int b = in.read();
            if (b < 0) {
                throw truncated(count - i);
            }
            value |= (long) b << (8 * i);
        }
        position += count;
        return value;
    }

    private ModelFileException truncated(long missing) {
        return new ModelFileException(file, position, "file is truncated: " + missing + " more byte(s) expected", new EOFException());
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
