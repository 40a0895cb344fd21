package dev.placementaudit.producer.llamacpp;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Optional;

/**
 * llama.cpp's native library, taken out of de.kherud:llama's jar once per user and version instead of at every start
 * (the binding writes it to a new temporary file each time: about a quarter of a second of a small model's load). The
 * child JVM is pointed at it with the binding's own {@code de.kherud.llama.lib.path}. Where the jar has no library for
 * this platform, or the cache cannot be written, nothing is cached and the binding does as it always does (and says so
 * when there is no library).
 */
final class NativeLibraryCache {
    private NativeLibraryCache() {
    }

    /** The folder holding this platform's library, taken out of the jar if it is not there yet; empty if there is none. */
    static Optional<Path> folder() {
        String resource = "/de/kherud/llama/" + os() + "/" + arch() + "/" + System.mapLibraryName("jllama");
        try (InputStream in = NativeLibraryCache.class.getResourceAsStream(resource)) {
            if (in == null) {
                return Optional.empty();
            }
            byte[] bytes = in.readAllBytes();
            String digest = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes)).substring(0, 16);
            Path folder = cacheHome().resolve("placement-audit").resolve("llama.cpp").resolve(digest);
            Path library = folder.resolve(System.mapLibraryName("jllama"));
            if (!Files.isRegularFile(library) || Files.size(library) != bytes.length) {
                Files.createDirectories(folder);
                Path partial = Files.createTempFile(folder, "jllama", ".partial");
                Files.write(partial, bytes);
                try {
                    Files.move(partial, library, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                } catch (AtomicMoveNotSupportedException e) {
                    Files.move(partial, library, StandardCopyOption.REPLACE_EXISTING);
                }
            }
            return Optional.of(folder);
        } catch (IOException | NoSuchAlgorithmException | RuntimeException e) {
            return Optional.empty();
        }
    }

    private static Path cacheHome() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        return xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
    }

    /** The binding's folder names (its OSInfo): Linux, Mac, Windows. */
    private static String os() {
        String name = System.getProperty("os.name").toLowerCase(Locale.ROOT);
        return name.contains("win") ? "Windows" : name.contains("mac") || name.contains("darwin") ? "Mac" : name.contains("linux") ? "Linux" : name;
    }

    private static String arch() {
        String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
        return switch (arch) {
            case "amd64", "x86_64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            case "x86", "i386", "i686" -> "x86";
            default -> arch;
        };
    }
}
