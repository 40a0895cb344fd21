package dev.placementaudit.resolution;

import dev.placementaudit.resolution.InvalidLoadException.Code;
import org.apache.avro.Schema;
import org.apache.avro.generic.IndexedRecord;

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
        for (Schema.Field field : record.getSchema().getFields()) {
            check(record.get(field.pos()), path.isEmpty() ? field.name() : path + "." + field.name());
        }
    }

    private static void check(Object value, String path) {
        if (value instanceof CharSequence text) {
            checkChars(text, path);
        } else if (value instanceof IndexedRecord nested) {
            check(nested, path);
        } else if (value instanceof List<?> list) {
            for (int i = 0; i < list.size(); i++) {
                check(list.get(i), path + "[" + i + "]");
            }
        } else if (value instanceof Map<?, ?> map) {
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                check(entry.getKey(), path + " (a key)");
                check(entry.getValue(), path + "[" + entry.getKey() + "]");
            }
        }
    }

    private static void checkChars(CharSequence text, String path) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < 0x20 && c != '\t' || c == 0x7f) {
                throw new InvalidLoadException(Code.UNSTORABLE_TEXT, path, String.format("has control character U+%04X at index %d: %s", (int) c, i,
                        shown(text)));
            }
            if (Character.isSurrogate(c)) {
                boolean paired = Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1));
                if (!paired) {
                    throw new InvalidLoadException(Code.UNSTORABLE_TEXT, path, String.format("has an unpaired surrogate U+%04X at index %d: %s", (int) c,
                            i, shown(text)));
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
