package dev.placementaudit.producer.llamacpp;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;

/**
 * A Linux process's memory as the kernel accounts it: the resident bytes of a file's mappings ({@code smaps}) and its
 * resident anonymous memory ({@code RssAnon} in {@code status}).
 */
public final class ProcessMemory {
    /** A process's memory at one moment. */
    public record Reading(long fileMappedResident, long fileMappedSize, long anonymousResident) {
    }

    /** The process went away while it was being read. */
    public static final class ProcessGone extends RuntimeException {
        public ProcessGone(String message) {
            super(message);
        }
    }

    private ProcessMemory() {
    }

    /** @param pid a process id, or "self" */
    public static Reading read(String pid, Path mappedFile) {
        Path proc = Path.of("/proc", pid);
        try {
            String file = mappedFile.toRealPath().toString();
            long rss = 0;
            long size = 0;
            boolean inFile = false;
            for (String line : Files.readAllLines(proc.resolve("smaps"))) {
                if (isMappingHeader(line)) {
                    inFile = line.endsWith(" " + file);
                } else if (inFile && line.startsWith("Rss:")) {
                    rss += kib(line);
                } else if (inFile && line.startsWith("Size:")) {
                    size += kib(line);
                }
            }
            long anon = 0;
            List<String> status = Files.readAllLines(proc.resolve("status"));
            for (String line : status) {
                if (line.startsWith("RssAnon:")) {
                    anon = kib(line);
                }
            }
            return new Reading(rss, size, anon);
        } catch (NoSuchFileException e) {
            throw new ProcessGone("process " + pid + " is gone (" + e.getFile() + " no longer there)");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + proc + "'s memory", e);
        }
    }

    /** An smaps mapping line: {@code 7f..-7f.. r--p 00000000 08:01 1234   /path}. */
    private static boolean isMappingHeader(String line) {
        int dash = line.indexOf('-');
        int space = line.indexOf(' ');
        return dash > 0 && space > dash && line.substring(0, dash).chars().allMatch(c -> Character.digit(c, 16) >= 0);
    }

    private static long kib(String line) {
        String[] parts = line.trim().split("\\s+");
        return Long.parseLong(parts[1]) * 1024;
    }
}
