package dev.placementaudit.resolution;

import dev.placementaudit.resolution.InvalidLoadException.Code;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.IndexedRecord;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Every string of an event, wherever it sits (records, lists, map keys and values), checked for what no store, log or
 * header should carry: control characters other than tab (PostgreSQL refuses NUL outright) and unpaired surrogates
 * (no valid UTF-8 encodes one). Such a load is refused at the worker, naming the field, rather than dead-lettered
 * later by the store, one decision at a time.
 */
final class StorableText {
    /** How much of an offending value an error message shows. */
    private static final int SHOWN = 120;

    private StorableText() {
    }

    static void check(IndexedRecord record, String path) {
        check(record, path, null);
    }

    /** The same, but for the top-level field named {@code skipped} (checked already, for a load's tensors). */
    static void check(IndexedRecord record, String path, String skipped) {
        try {
            checkRecord(record, record.getSchema(), skipped);
        } catch (Unstorable e) {
            String where = e.path();
            throw new InvalidLoadException(Code.UNSTORABLE_TEXT, path.isEmpty() ? where.substring(where.startsWith(".") ? 1 : 0) : path + where,
                    e.getMessage());
        }
    }

    /*
     * The walk follows the schema, not the values' classes: a part of the schema that holds no string (a tensor's shape,
     * its sizes, its enums) is not visited at all, and no value is asked which interfaces it implements (on JDK 17 such
     * checks from several threads contend on one cache per class: JDK-8180450). The path of a value is named only when it
     * is at fault, built as the failure unwinds: building one for every value was most of the check's cost, and the check
     * a large share of the collector's and the worker's.
     */

    /**
     * Per record schema (by full name: an event's records are always its current schema's), which fields hold a string
     * somewhere below them. Keyed by name rather than by the schema, whose hashCode and equals walk it whole.
     */
    private static final Map<String, Fields> TEXT_FIELDS = new ConcurrentHashMap<>();

    private record Fields(Schema schema, boolean[] holdText) {
    }

    private static boolean[] textFields(Schema record) {
        Fields known = TEXT_FIELDS.get(record.getFullName());
        if (known == null || known.schema() != record) {
            List<Schema.Field> fields = record.getFields();
            boolean[] holdText = new boolean[fields.size()];
            for (int f = 0; f < holdText.length; f++) {
                holdText[f] = holdsText(fields.get(f).schema(), new HashSet<>(Set.of(record.getFullName())));
            }
            known = new Fields(record, holdText);
            TEXT_FIELDS.put(record.getFullName(), known);
        }
        return known.holdText();
    }

    private static boolean holdsText(Schema schema, Set<String> visiting) {
        return switch (schema.getType()) {
            // A string with a logical type (a uuid) holds a converted value, not text.
            case STRING -> schema.getLogicalType() == null;
            case MAP -> true;
            case ARRAY -> holdsText(schema.getElementType(), visiting);
            case UNION -> schema.getTypes().stream().anyMatch(branch -> holdsText(branch, visiting));
            case RECORD -> visiting.add(schema.getFullName())
                    && schema.getFields().stream().anyMatch(field -> holdsText(field.schema(), visiting));
            default -> false;
        };
    }

    private static void checkRecord(IndexedRecord record, Schema schema, String skipped) {
        List<Schema.Field> fields = schema.getFields();
        boolean[] holdText = textFields(schema);
        for (int f = 0; f < holdText.length; f++) {
            if (!holdText[f] || (skipped != null && fields.get(f).name().equals(skipped))) {
                continue;
            }
            try {
                checkValue(record.get(f), fields.get(f).schema());
            } catch (Unstorable e) {
                throw e.under("." + fields.get(f).name());
            }
        }
    }

    private static void checkValue(Object value, Schema schema) {
        if (value == null) {
            return;
        }
        switch (schema.getType()) {
            case STRING -> {
                if (value instanceof CharSequence text) {
                    checkChars(text);
                }
            }
            case RECORD -> checkRecord((IndexedRecord) value, schema, null);
            case UNION -> {
                List<Schema> branches = schema.getTypes();
                // The usual optional value: null or one kind, no need to ask which.
                boolean optional = branches.size() == 2 && branches.get(0).getType() == Schema.Type.NULL;
                checkValue(value, optional ? branches.get(1) : branches.get(GenericData.get().resolveUnion(schema, value)));
            }
            case ARRAY -> {
                List<?> list = (List<?>) value;
                Schema items = schema.getElementType();
                for (int i = 0; i < list.size(); i++) {
                    try {
                        checkValue(list.get(i), items);
                    } catch (Unstorable e) {
                        throw e.under("[" + i + "]");
                    }
                }
            }
            case MAP -> {
                for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                    try {
                        checkChars((CharSequence) entry.getKey());
                    } catch (Unstorable e) {
                        throw e.under(" (a key)");
                    }
                    try {
                        checkValue(entry.getValue(), schema.getValueType());
                    } catch (Unstorable e) {
                        throw e.under("[" + entry.getKey() + "]");
                    }
                }
            }
            default -> {
                // numbers, booleans, enums, bytes: nothing a store could not hold
            }
        }
    }

    /** A string at fault, and the path to it, gathered innermost first as the check unwinds. */
    private static final class Unstorable extends RuntimeException {
        private final List<String> pieces = new ArrayList<>();

        Unstorable(String message) {
            super(message, null, false, false);
        }

        Unstorable under(String piece) {
            pieces.add(piece);
            return this;
        }

        String path() {
            StringBuilder path = new StringBuilder();
            for (int i = pieces.size() - 1; i >= 0; i--) {
                path.append(pieces.get(i));
            }
            return path.toString();
        }
    }

    private static void checkChars(CharSequence text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < 0x20 && c != '\t' || c == 0x7f) {
                throw new Unstorable(String.format("has control character U+%04X at index %d: %s", (int) c, i, shown(text)));
            }
            if (Character.isSurrogate(c)) {
                boolean paired = Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1));
                if (!paired) {
                    throw new Unstorable(String.format("has an unpaired surrogate U+%04X at index %d: %s", (int) c, i, shown(text)));
                }
                i++;
            }
        }
    }

    /** The value as Java would write it, escapes included, cut to {@value #SHOWN} characters. */
    static String shown(CharSequence text) {
        StringBuilder out = new StringBuilder("'");
        for (int i = 0; i < text.length() && out.length() < SHOWN; i++) {
            char c = text.charAt(i);
            if (c < 0x20 || c == 0x7f || Character.isSurrogate(c) || c == '\'') {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append(text.length() > SHOWN ? "'... (" + text.length() + " characters)" : "'");
        return out.toString();
    }
}
