package dev.placementaudit.store.ingest;

/** Text about a poison record, made safe to store and to send: the record's own bytes are what was refused. */
final class Text {
    private Text() {
    }

    /** Control characters (but tab) and unpaired surrogates replaced by U+FFFD, and at most {@code max} characters. */
    static String printable(String text, int max) {
        StringBuilder out = new StringBuilder(Math.min(text.length(), max));
        for (int i = 0; i < text.length() && out.length() < max; i++) {
            char c = text.charAt(i);
            boolean pairedHigh = Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1));
            if (pairedHigh) {
                out.append(c).append(text.charAt(++i));
            } else if ((c < 0x20 && c != '\t') || c == 0x7f || Character.isSurrogate(c)) {
                out.append('\uFFFD');
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }
}
