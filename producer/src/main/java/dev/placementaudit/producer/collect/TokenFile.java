package dev.placementaudit.producer.collect;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * A fleet's collector token, read from its file. What is wrong with a file is said by naming the file and what it
 * holds instead, never by quoting it: a key or certificate passed by mistake must not end up in a terminal or a log.
 */
public final class TokenFile {
    /** Longer than any token the collector makes, far shorter than a key or certificate. */
    private static final int MAX_LENGTH = 512;

    private TokenFile() {
    }

    /** The token; an {@link IllegalArgumentException} whose message names the file and what is wrong with it. */
    public static String read(Path file) {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException("the token file " + file + " does not exist");
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the token file " + file + " (" + e.getClass().getSimpleName() + ")");
        }
        String text = new String(bytes, StandardCharsets.ISO_8859_1).strip();
        if (text.isEmpty()) {
            throw new IllegalArgumentException("the token file " + file + " is empty");
        }
        String wrong = null;
        if (text.startsWith("-----BEGIN ")) {
            wrong = "it holds a PEM block (a certificate or a key?)";
        } else if (text.chars().anyMatch(ch -> ch < 0x20 && ch != '\n' && ch != '\r' || ch > 0x7e)) {
            wrong = "it holds binary or non-ASCII bytes (a keystore?)";
        } else if (text.lines().count() > 1) {
            wrong = "it holds " + text.lines().count() + " lines";
        } else if (text.chars().anyMatch(Character::isWhitespace)) {
            wrong = "it holds spaces";
        } else if (text.length() > MAX_LENGTH) {
            wrong = "it holds " + text.length() + " characters";
        }
        if (wrong != null) {
            throw new IllegalArgumentException("the token file " + file + " does not hold a token: " + wrong + "; a token is one line of "
                    + "printable characters (placement-audit collector token makes one)");
        }
        return text;
    }
}
