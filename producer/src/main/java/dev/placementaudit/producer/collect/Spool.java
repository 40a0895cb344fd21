package dev.placementaudit.producer.collect;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Batches a device could not deliver, on disk, in the order they were made: one gzip file per batch, named by a
 * sequence number and its format ({@code 00000000000000000042.avro.gz}), written to a temporary name and moved into place so a crash
 * never leaves half a batch. It survives a restart (the sequence goes on from the highest file), is bounded in bytes,
 * and a batch the collector refuses for good is moved to {@code refused/} beside it rather than deleted.
 */
public final class Spool {
    private static final String SUFFIX = ".gz";
    private final Path dir;
    private final Path refused;
    private final long maxBytes;
    private long next;

    /** A batch that would take the spool over its bound: the device must hear of it (nothing is dropped silently). */
    public static final class SpoolFullException extends CollectorException {
        SpoolFullException(String message) {
            super(message, 0, false);
        }
    }

    public Spool(Path dir, long maxBytes) {
        this.dir = dir;
        this.refused = dir.resolve("refused");
        this.maxBytes = maxBytes;
        try {
            Files.createDirectories(refused);
            this.next = batches().stream().mapToLong(Spool::sequence).max().orElse(0) + 1;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot use " + dir + " as the collector client's spool", e);
        }
    }

    /** Keeps {@code gzipBody} as the newest batch. */
    public synchronized void append(byte[] gzipBody, CollectorClient.Format format) throws IOException {
        long used = bytes();
        if (used + gzipBody.length > maxBytes) {
            throw new SpoolFullException("the spool " + dir + " holds " + used + " bytes; a batch of " + gzipBody.length
                    + " more would take it over its " + maxBytes + " bytes: the batch is not kept; deliver the spool (is the collector reachable?) "
                    + "or give it more room");
        }
        Path temporary = dir.resolve(String.format("%020d%s.tmp", next, format.suffix));
        Files.write(temporary, gzipBody);
        Path batch = dir.resolve(String.format("%020d%s", next, format.suffix));
        try {
            Files.move(temporary, batch, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(temporary, batch, StandardCopyOption.REPLACE_EXISTING);
        }
        next++;
    }

    /** The oldest batch, if any. */
    public synchronized Optional<Path> oldest() throws IOException {
        return batches().stream().findFirst();
    }

    public synchronized void delivered(Path batch) throws IOException {
        Files.deleteIfExists(batch);
    }

    /** Moves a batch the collector refused for good out of the way, where an operator can read why. */
    public synchronized void refused(Path batch, String why) throws IOException {
        Files.move(batch, refused.resolve(batch.getFileName()), StandardCopyOption.REPLACE_EXISTING);
        Files.writeString(refused.resolve(batch.getFileName() + ".reason.txt"), why + System.lineSeparator());
    }

    /** Batches waiting, oldest first. */
    public synchronized List<Path> batches() throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(f -> f.getFileName().toString().endsWith(SUFFIX)).sorted().toList();
        }
    }

    public synchronized long bytes() throws IOException {
        long total = 0;
        for (Path batch : batches()) {
            total += Files.size(batch);
        }
        return total;
    }

    public Path dir() {
        return dir;
    }

    private static long sequence(Path batch) {
        String name = batch.getFileName().toString();
        return Long.parseLong(name.substring(0, name.indexOf('.')));
    }

    /** How a spooled batch was written, from its name. */
    static CollectorClient.Format format(Path batch) {
        return batch.getFileName().toString().endsWith(CollectorClient.Format.JSON.suffix) ? CollectorClient.Format.JSON : CollectorClient.Format.AVRO;
    }
}
