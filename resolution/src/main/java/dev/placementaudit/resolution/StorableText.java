package dev.placementaudit.resolution;

import dev.placementaudit.resolution.InvalidLoadException.Code;
import org.apache.avro.Schema;
import org.apache.avro.generic.IndexedRecord;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

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
        try {
            checkRecord(record);
        } catch (Unstorable e) {
            String where = e.path();
            throw new InvalidLoadException(Code.UNSTORABLE_TEXT, path.isEmpty() ? where.substring(where.startsWith(".") ? 1 : 0) : path + where,
                    e.getMessage());
        }
    }

    /*
     * The path of a value is named only when it is at fault: built as the failure unwinds, not for every value on the way
     * (that concatenation was most of the check's cost, and the check a large share of the collector's and the worker's).
     */

    private static void checkRecord(IndexedRecord record) {
        List<Schema.Field> fields = record.getSchema().getFields();
        for (int f = 0; f < fields.size(); f++) {
            try {
                checkValue(record.get(f));
            } catch (Unstorable e) {
                throw e.under("." + fields.get(f).name());
            }
        }
    }

    private static void checkValue(Object value) {
        if (value instanceof CharSequence text) {
            checkChars(text);
        } else if (value instanceof IndexedRecord nested) {
            checkRecord(nested);
        } else if (value instanceof List<?> list) {
            for (int i = 0; i < list.size(); i++) {
                try {
                    checkValue(list.get(i));
                } catch (Unstorable e) {
                    throw e.under("[" + i + "]");
                }
            }
        } else if (value instanceof Map<?, ?> map) {
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                try {
                    checkValue(entry.getKey());
                } catch (Unstorable e) {
                    throw e.under(" (a key)");
                }
                try {
                    checkValue(entry.getValue());
                } catch (Unstorable e) {
                    throw e.under("[" + entry.getKey() + "]");
                }
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
