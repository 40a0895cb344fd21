package dev.placementaudit.schemas;

import org.apache.avro.Schema;
import org.apache.avro.message.SchemaStore;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The released versions of each schema, read from {@code dev/placementaudit/events/history/<Name>/v<N>.avsc}.
 * Versions are numbered without gaps from 1; the first missing number ends the history.
 */
public final class SchemaHistory {
    private static final String ROOT = "/dev/placementaudit/events/history/";
    private static final Map<String, List<Schema>> CACHE = new ConcurrentHashMap<>();

    private SchemaHistory() {
    }

    public static List<Schema> versions(String schemaName) {
        return CACHE.computeIfAbsent(schemaName, SchemaHistory::load);
    }

    /** A store that knows every version of every event, keyed by fingerprint, for single-object decoding. */
    public static SchemaStore.Cache storeOfAllVersions() {
        SchemaStore.Cache store = new SchemaStore.Cache();
        for (EventType type : EventType.values()) {
            type.history().forEach(store::addSchema);
        }
        return store;
    }

    private static List<Schema> load(String schemaName) {
        List<Schema> versions = new ArrayList<>();
        for (int version = 1; ; version++) {
            String path = ROOT + schemaName + "/v" + version + ".avsc";
            try (InputStream in = SchemaHistory.class.getResourceAsStream(path)) {
                if (in == null) {
                    break;
                }
                // A fresh parser per version: versions redefine the same named types.
                versions.add(new Schema.Parser().parse(in));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read schema " + path, e);
            }
        }
        if (versions.isEmpty()) {
            throw new IllegalStateException("no schema history for " + schemaName + " under " + ROOT);
        }
        return List.copyOf(versions);
    }
}
