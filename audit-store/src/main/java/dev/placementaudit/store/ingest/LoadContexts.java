package dev.placementaudit.store.ingest;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * What a load says of where it ran and what it ran repeats across a deployment's loads, so each distinct value is
 * stored once (V17, docs/adr/0013): a <em>site</em> ({@code load_sites}: cluster, host, platform, profile) and a
 * <em>build</em> ({@code load_builds}: model name and SHA-256, resolver version, policy digest), each named by a key; a
 * row of {@code load_rows} keeps the two keys, and the {@code loads} view joins the values back, so every reader sees
 * the columns it always had.
 *
 * <p>A key is the first 8 bytes of the SHA-256 of its values, so writing a load needs no round trip for a sequence.
 * Every key a batch uses is checked against its table (one query per batch and dimension for the values this writer
 * has not met committed yet): a key already taken by other values (a 64-bit collision, whoever wrote it) moves to the
 * next one, so no load is ever joined to another's site. Rows are never updated or deleted, so a key once committed
 * stays true and is remembered: those found committed at once, and those this writer inserted once its transaction
 * commits ({@link #committed}); a transaction that rolls back ({@link #rolledBack}) leaves nothing remembered.
 * Not thread-safe: one per writer.
 */
public final class LoadContexts {
    /** How many keys a dimension remembers; a fleet with more distinct sites checks the rest batch by batch. */
    private static final int REMEMBERED = 65_536;
    /** Keys tried for one value before giving up: each step past the first needs a 64-bit collision. */
    private static final int PROBES = 16;

    public static final Dimension SITES = new Dimension("load_sites", "site_key", List.of("cluster", "host", "platform_name", "profile_name"),
            List.of("VARCHAR(200)", "VARCHAR(200)", "VARCHAR(100)", "VARCHAR(100)"));
    /** A build's runtime (V23) is null for SKaiNET's rules, and then not part of its key: the keys of builds stored before stay. */
    public static final Dimension BUILDS = new Dimension("load_builds", "build_key", List.of("model_name", "model_sha256", "resolver_version",
            "policy_digest", "runtime"), List.of("VARCHAR(500)", "VARCHAR(64)", "VARCHAR(100)", "VARCHAR(64)", "VARCHAR(200)"));

    private final Table sites;
    private final Table builds;

    LoadContexts(Dialect dialect) {
        this.sites = new Table(SITES, dialect);
        this.builds = new Table(BUILDS, dialect);
    }

    /** A load's site and build keys. */
    record Keys(long site, long build) {
    }

    static List<String> site(LoadResolved l) {
        return Arrays.asList(l.getCluster(), l.getHost(), l.getPlatformName(), l.getProfileName());
    }

    static List<String> build(LoadResolved l) {
        return Arrays.asList(l.getModelName(), l.getModelSha256(), l.getResolverVersion(), l.getPolicyDigest(), l.getRuntime());
    }

    /** The keys of these loads' sites and builds, by load id; the rows not stored yet are inserted in this transaction. */
    Map<String, Keys> keys(Connection c, Collection<LoadResolved> loads) throws SQLException {
        if (loads.isEmpty()) {
            return Map.of();
        }
        List<LoadResolved> all = List.copyOf(loads);
        List<List<String>> siteValues = all.stream().map(LoadContexts::site).toList();
        List<List<String>> buildValues = all.stream().map(LoadContexts::build).toList();
        Map<List<String>, Long> siteKeys = sites.keys(c, siteValues);
        Map<List<String>, Long> buildKeys = builds.keys(c, buildValues);
        Map<String, Keys> keys = new HashMap<>();
        for (int i = 0; i < all.size(); i++) {
            keys.put(all.get(i).getLoadId().toString(), new Keys(siteKeys.get(siteValues.get(i)), buildKeys.get(buildValues.get(i))));
        }
        return keys;
    }

    /** The transaction that called {@link #keys} committed: the rows it inserted are there for good. */
    void committed() {
        sites.committed();
        builds.committed();
    }

    /** It rolled back: the rows it inserted are not there. */
    void rolledBack() {
        sites.written.clear();
        builds.written.clear();
    }

    /** The keys of these values of one dimension ({@link #SITES} or {@link #BUILDS}), inserting those not stored yet. */
    Map<List<String>, Long> keys(Connection c, Dimension dimension, List<List<String>> values) throws SQLException {
        return (dimension == SITES ? sites : builds).keys(c, values);
    }

    /** A dimension table: its name, its key column and its value columns (with their SQL types, for the insert's casts). */
    public record Dimension(String table, String key, List<String> columns, List<String> types) {
        /**
         * The first key tried for these values: the first 8 bytes of the SHA-256 of each value, length-prefixed (null apart from
         * ""); nulls at the end are left out, so a column added later (null for what was stored before) keeps every key.
         */
        public static long digest(List<String> values) {
            int end = values.size();
            while (end > 0 && values.get(end - 1) == null) {
                end--;
            }
            MessageDigest sha256;
            try {
                sha256 = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
            ByteBuffer length = ByteBuffer.allocate(4);
            for (String value : values.subList(0, end)) {
                byte[] bytes = value == null ? new byte[0] : value.getBytes(StandardCharsets.UTF_8);
                sha256.update(length.clear().putInt(value == null ? -1 : bytes.length).array());
                sha256.update(bytes);
            }
            return ByteBuffer.wrap(sha256.digest()).getLong();
        }

        /**
         * A key for each of these distinct values, none taken by other values in {@code taken} (the stored rows by key) or by
         * each other: {@link #digest}, else the next free key.
         */
        public Map<List<String>, Long> assign(Collection<List<String>> values, Map<Long, List<String>> taken) {
            Map<List<String>, Long> keys = new LinkedHashMap<>();
            for (List<String> value : values) {
                long key = digest(value);
                for (List<String> holder = taken.get(key); holder != null && !holder.equals(value); holder = taken.get(key)) {
                    key++;
                }
                taken.put(key, value);
                keys.put(value, key);
            }
            return keys;
        }
    }

    /** One dimension as this writer writes it: the keys it has found committed, and its statements. */
    private static final class Table {
        private final Dimension dimension;
        private final String insert;
        /** The rows inserted by the open transaction. */
        private final Map<List<String>, Long> written = new HashMap<>();
        private final Map<List<String>, Long> committed = new LinkedHashMap<>(256, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<List<String>, Long> eldest) {
                return size() > REMEMBERED;
            }
        };

        Table(Dimension dimension, Dialect dialect) {
            this.dimension = dimension;
            List<String> columns = new ArrayList<>();
            columns.add(dimension.key());
            columns.addAll(dimension.columns());
            List<String> types = new ArrayList<>();
            types.add("BIGINT");
            types.addAll(dimension.types());
            this.insert = dialect.insertIgnoringDuplicates(dimension.table(), columns, types, dimension.key());
        }

        Map<List<String>, Long> keys(Connection c, List<List<String>> all) throws SQLException {
            Map<List<String>, Long> keys = new HashMap<>();
            Set<List<String>> pending = new LinkedHashSet<>();
            for (List<String> value : all) {
                Long known = committed.get(value);
                if (known != null) {
                    keys.put(value, known);
                } else {
                    pending.add(value);
                }
            }
            Map<List<String>, Long> tried = new HashMap<>();
            pending.forEach(value -> tried.put(value, Dimension.digest(value)));
            for (int round = 0; !pending.isEmpty(); round++) {
                if (round == PROBES) {
                    throw new IllegalStateException(dimension.table() + ": no free key for " + pending.iterator().next() + " after " + PROBES
                            + " tries");
                }
                Map<Long, List<String>> stored = read(c, new HashSet<>(tried.values()));
                // Rows to insert, in key order (two instances inserting some of the same keys wait on each other in one order).
                Map<Long, List<String>> missing = new TreeMap<>();
                for (var it = pending.iterator(); it.hasNext(); ) {
                    List<String> value = it.next();
                    long key = tried.get(value);
                    List<String> holder = stored.get(key);
                    if (holder == null && !missing.containsKey(key)) {
                        missing.put(key, value);
                    } else if (Objects.equals(holder, value)) {
                        keys.put(value, key);
                        if (!written.containsKey(value)) {
                            committed.put(value, key);
                        }
                        it.remove();
                    } else if (holder != null) {
                        tried.put(value, key + 1);
                    }
                    // else another value of this batch claims the key first this round: tried again next round.
                }
                insertMissing(c, missing);
                missing.forEach((key, value) -> written.put(value, key));
            }
            return keys;
        }

        void committed() {
            committed.putAll(written);
            written.clear();
        }

        /** The stored values of these keys. */
        private Map<Long, List<String>> read(Connection c, Set<Long> keys) throws SQLException {
            Map<Long, List<String>> stored = new HashMap<>();
            for (List<Long> chunk : InList.chunks(keys)) {
                String sql = "SELECT " + dimension.key() + ", " + String.join(", ", dimension.columns()) + " FROM " + dimension.table() + " WHERE "
                        + dimension.key() + " IN (%s)";
                try (PreparedStatement s = InList.prepare(c, sql, chunk); ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        String[] values = new String[dimension.columns().size()];
                        for (int i = 0; i < values.length; i++) {
                            values[i] = rs.getString(i + 2);
                        }
                        stored.put(rs.getLong(1), Arrays.asList(values));
                    }
                }
            }
            return stored;
        }

        private void insertMissing(Connection c, Map<Long, List<String>> missing) throws SQLException {
            if (missing.isEmpty()) {
                return;
            }
            try (PreparedStatement s = c.prepareStatement(insert)) {
                for (Map.Entry<Long, List<String>> row : missing.entrySet()) {
                    s.setLong(1, row.getKey());
                    for (int i = 0; i < row.getValue().size(); i++) {
                        s.setString(i + 2, row.getValue().get(i));
                    }
                    s.addBatch();
                }
                s.executeBatch();
            }
        }
    }
}
