package dev.placementaudit.schemas;

import org.apache.avro.Schema;

/**
 * Walks one value of Avro's binary encoding without decoding it: where it ends. {@link LoadLayouts} finds a load's
 * fields this way, to compare their bytes before deciding what to decode. Every length and union branch read is
 * checked against the bytes and the schema; what does not walk cleanly is a {@link MalformedException}, and the caller
 * decodes the event whole to learn why.
 */
final class AvroWalk {
    private static final Schema MAP_KEY = Schema.create(Schema.Type.STRING);

    private AvroWalk() {
    }

    static final class MalformedException extends Exception {
        MalformedException(String message) {
            super(message, null, false, false);
        }
    }

    /** The position just past the value of {@code schema} that starts at {@code at}. */
    static int skip(Schema schema, byte[] bytes, int at) throws MalformedException {
        return switch (schema.getType()) {
            case NULL -> at;
            case BOOLEAN -> within(bytes, at + 1);
            case INT, LONG, ENUM -> varintEnd(bytes, at);
            case FLOAT -> within(bytes, at + 4);
            case DOUBLE -> within(bytes, at + 8);
            case FIXED -> within(bytes, at + schema.getFixedSize());
            case STRING, BYTES -> {
                int from = varintEnd(bytes, at);
                long length = zigzag(bytes, at);
                if (length < 0 || length > bytes.length - from) {
                    throw new MalformedException("a length of " + length + " at byte " + at);
                }
                yield from + (int) length;
            }
            case RECORD -> {
                for (Schema.Field field : schema.getFields()) {
                    at = skip(field.schema(), bytes, at);
                }
                yield at;
            }
            case ARRAY -> blocks(bytes, at, schema.getElementType(), null);
            case MAP -> blocks(bytes, at, schema.getValueType(), MAP_KEY);
            case UNION -> {
                long branch = zigzag(bytes, at);
                if (branch < 0 || branch >= schema.getTypes().size()) {
                    throw new MalformedException("union branch " + branch + " at byte " + at);
                }
                yield skip(schema.getTypes().get((int) branch), bytes, varintEnd(bytes, at));
            }
        };
    }

    /** An array's or a map's blocks: a count (negative: followed by the block's size in bytes), its items, to a count of 0. */
    private static int blocks(byte[] bytes, int at, Schema item, Schema key) throws MalformedException {
        while (true) {
            long count = zigzag(bytes, at);
            at = varintEnd(bytes, at);
            if (count == 0) {
                return at;
            }
            if (count < 0) {
                count = -count;
                at = varintEnd(bytes, at);
            }
            if (count > bytes.length - at) {
                // Every item of the events' schemas takes a byte at least; a count past the bytes left is taken as
                // malformed (the caller's whole decode is the judge), rather than walked item by item for nothing.
                throw new MalformedException("a block of " + count + " items at byte " + at);
            }
            for (long i = 0; i < count; i++) {
                if (key != null) {
                    at = skip(key, bytes, at);
                }
                at = skip(item, bytes, at);
            }
        }
    }

    private static int within(byte[] bytes, int end) throws MalformedException {
        if (end > bytes.length) {
            throw new MalformedException("the bytes end at " + bytes.length + ", a value at " + end);
        }
        return end;
    }

    /** Where the variable-length integer starting at {@code at} ends (at most 10 bytes, as Avro reads a long). */
    private static int varintEnd(byte[] bytes, int at) throws MalformedException {
        for (int i = at; i < Math.min(bytes.length, at + 10); i++) {
            if ((bytes[i] & 0x80) == 0) {
                return i + 1;
            }
        }
        throw new MalformedException("no variable-length integer at byte " + at);
    }

    /** The zig-zag encoded long starting at {@code at}. */
    private static long zigzag(byte[] bytes, int at) throws MalformedException {
        long value = 0;
        int end = varintEnd(bytes, at);
        for (int i = at, shift = 0; i < end; i++, shift += 7) {
            value |= (long) (bytes[i] & 0x7f) << shift;
        }
        return (value >>> 1) ^ -(value & 1);
    }
}
