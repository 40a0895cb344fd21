package dev.placementaudit.producer.model;

import java.nio.file.Path;

/**
 * A model file that cannot be read: the message names the file, the problem and the byte offset where it was found.
 * Bad input, hence an {@link IllegalArgumentException}: the command line reports it as the user's to fix.
 */
public final class ModelFileException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final long offset;

    public ModelFileException(Path file, long offset, String problem) {
        super(file + " at byte " + offset + ": " + problem);
        this.offset = offset;
    }

    public ModelFileException(Path file, long offset, String problem, Throwable cause) {
        super(file + " at byte " + offset + ": " + problem, cause);
        this.offset = offset;
    }

    public long offset() {
        return offset;
    }
}
