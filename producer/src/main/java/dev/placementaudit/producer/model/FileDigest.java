package dev.placementaudit.producer.model;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.function.LongConsumer;

/** SHA-256 of a file, streamed in 1 MiB chunks: multi-gigabyte models never sit in memory. */
public final class FileDigest {
    private FileDigest() {
    }

    public static String sha256(Path file, LongConsumer bytesRead) {
        try (InputStream in = new DigestInputStream(Files.newInputStream(file), MessageDigest.getInstance("SHA-256"))) {
            byte[] buffer = new byte[1 << 20];
            long total = 0;
            for (int n; (n = in.read(buffer)) > 0; ) {
                total += n;
                bytesRead.accept(total);
            }
            return HexFormat.of().formatHex(((DigestInputStream) in).getMessageDigest().digest());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM ships SHA-256", e);
        }
    }
}
