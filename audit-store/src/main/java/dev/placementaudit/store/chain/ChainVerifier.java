package dev.placementaudit.store.chain;

import dev.placementaudit.store.db.ById;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Map;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;

/**
 * Recomputes the chains from the rows as they are now and names every link that no longer holds: an entry missing
 * or out of order, a load row or decision changed since it was chained, an entry whose own hash was edited, a load
 * chained twice, a complete load that was never chained, and (given the heads published to the log) a chain that
 * disagrees with what was published, which is how a store rewritten together with its hashes is caught.
 */
public final class ChainVerifier {
    private ChainVerifier() {
    }

    /** One broken link: the deployment, the entry's position (0 when it has none) and load, and what differs. */
    public record Break(String deploymentId, long seq, String loadId, String what) {
    }

    /**
     * A deployment's chain as verified.
     *
     * @param entries    the entries checked
     * @param from       the entry the check started after: a mark an earlier verify left, trusted because the published
     *                   heads say the same (0: the whole chain was checked)
     * @param verifiedTo the newest published head the chain was found to agree with, entries and rows checked up to it:
     *                   where the next verify may start; null when none was checked or a link is broken
     */
    public record Chain(String deploymentId, long entries, String head, boolean publishedHeadChecked, long from, ChainHead verifiedTo) {
    }

    public record Report(List<Chain> chains, List<Break> breaks, boolean checkedAgainstLog) {
        public boolean intact() {
            return breaks.isEmpty();
        }

        public long entries() {
            return chains.stream().mapToLong(Chain::entries).sum();
        }
    }

    /**
     * @param deployment one deployment, or every one the store or the published heads know
     * @param published  the heads read from the chain topic, by deployment; empty when the log was not consulted
     */
    public static Report verify(Connection c, Optional<String> deployment, Optional<ChainLog.Published> published) throws SQLException {
        return verify(c, deployment, published, false);
    }

    /**
     * Checks each chain from where an earlier verify left its mark ({@code chain_verifications}) onward, when the mark is
     * one of the heads published to the log and the store's entry there still hashes to it: the cost grows with what is
     * new, not with the store. Rows and plans of entries before the mark are not read again (a change to one of them is
     * found by a full verify); a deployment with no mark, or one the log does not confirm, is checked whole.
     */
    public static Report verifySinceLastMark(Connection c, Optional<String> deployment, ChainLog.Published published) throws SQLException {
        return verify(c, deployment, Optional.of(published), true);
    }

    private static Report verify(Connection c, Optional<String> deployment, Optional<ChainLog.Published> published, boolean sinceMark)
            throws SQLException {
        TreeSet<String> deployments = new TreeSet<>();
        if (deployment.isPresent()) {
            deployments.add(deployment.get());
        } else {
            if (sinceMark) {
                // The chains the store keeps a head of, and those entered before V20: not every load read to list them
                // (at 10 million loads that read was most of a verify since the last). A complete load of a deployment with
                // no chain at all is the full verify's to find.
                deployments.addAll(strings(c, "SELECT deployment_id FROM deployment_locks WHERE chain_seq IS NOT NULL"));
                deployments.addAll(strings(c, "SELECT DISTINCT deployment_id FROM chain_entries_legacy"));
                deployments.addAll(VerificationMarks.read(c, Optional.empty()).keySet());
            } else {
                deployments.addAll(strings(c, "SELECT DISTINCT deployment_id FROM chain_entries"));
                deployments.addAll(strings(c, "SELECT DISTINCT deployment_id FROM loads WHERE complete = TRUE"));
            }
            published.ifPresent(p -> deployments.addAll(p.heads().keySet()));
        }
        List<Chain> chains = new ArrayList<>();
        List<Break> breaks = new ArrayList<>();
        Map<String, HashChain.Decisions> plans = new HashMap<>();
        Map<String, ChainHead> marks = sinceMark ? VerificationMarks.read(c, deployment) : Map.of();
        for (String d : deployments) {
            Optional<List<ChainHead>> heads = published.map(p -> p.heads().getOrDefault(d, List.of()));
            Optional<ChainHead> start = Optional.ofNullable(marks.get(d)).filter(mark -> heads.orElse(List.of()).stream()
                    .anyMatch(h -> h.seq() == mark.seq() && h.entryHash().equals(mark.entryHash())));
            int before = breaks.size();
            Chain chain = verifyOne(c, d, heads, published.map(p -> Optional.ofNullable(p.anchors().get(d))), breaks, plans, start);
            chains.add(breaks.size() > before ? new Chain(chain.deploymentId(), chain.entries(), chain.head(), chain.publishedHeadChecked(),
                    chain.from(), null) : chain);
        }
        return new Report(chains, breaks, published.isPresent());
    }

    private static Chain verifyOne(Connection c, String deployment, Optional<List<ChainHead>> published,
                                   Optional<Optional<ChainHead>> publishedAnchor, List<Break> breaks, Map<String, HashChain.Decisions> plans,
                                   Optional<ChainHead> mark) throws SQLException {
        boolean logConsulted = published.isPresent();
        // A pruned chain starts after its anchor: the last entry dropped by retention.
        Optional<ChainHead> anchor = HashChain.anchor(c, deployment);
        // A mark below the anchor was pruned past: the chain is checked from its anchor, as a whole.
        Optional<ChainHead> marked = mark.filter(m -> m.seq() >= expectedStart(anchor) - 1);
        // The store's entry at the mark must still be what was verified and published; otherwise the whole chain is checked.
        boolean holds = marked.isPresent() && HashChain.entryAt(c, deployment, marked.get().seq())
                .map(e -> e.entryHash().equals(marked.get().entryHash()) && e.loadId().equals(marked.get().loadId())).orElse(false);
        Optional<ChainHead> start = holds ? marked : Optional.empty();
        List<HashChain.Entry> entries = start.isPresent() ? HashChain.entriesAfter(c, deployment, start.get().seq()) : HashChain.entries(c, deployment);
        long expectedSeq = start.map(m -> m.seq() + 1).orElse(anchor.map(a -> a.seq() + 1).orElse(1L));
        String expectedPrev = start.map(ChainHead::entryHash).orElse(anchor.map(ChainHead::entryHash).orElse(HashChain.GENESIS));
        if (publishedAnchor.isPresent()) {
            Optional<ChainHead> logAnchor = publishedAnchor.get();
            boolean agree = anchor.isEmpty() ? logAnchor.isEmpty()
                    : logAnchor.isPresent() && logAnchor.get().seq() == anchor.get().seq() && logAnchor.get().entryHash().equals(anchor.get().entryHash());
            if (!agree) {
                breaks.add(new Break(deployment, anchor.map(ChainHead::seq).orElse(0L), "-", anchor.isPresent()
                        ? "the chain starts after entry " + anchor.get().seq() + " but the log's anchor says "
                          + logAnchor.map(a -> "entry " + a.seq()).orElse("nothing was pruned") + ": its start was cut by hand"
                        : "the log says entries up to " + logAnchor.get().seq() + " were pruned, but the store has no anchor: it was deleted"));
            }
        }
        Map<String, Long> chainedAt = new HashMap<>();
        // Each entry's load row as it is now, hashed in the entry's encoding (empty when the row is gone).
        List<Optional<HashChain.LoadRow>> rows = HashChain.loadRows(c, entries);
        for (int i = 0; i < entries.size(); i++) {
            HashChain.Entry e = entries.get(i);
            if (e.seq() != expectedSeq) {
                breaks.add(new Break(deployment, e.seq(), e.loadId(), e.seq() > expectedSeq
                        ? "entries " + expectedSeq + (e.seq() - 1 > expectedSeq ? ".." + (e.seq() - 1) : "") + " are missing before it: deleted"
                        : "its position repeats or goes back (expected " + expectedSeq + ")"));
            }
            Long earlier = chainedAt.putIfAbsent(e.loadId(), e.seq());
            if (earlier != null) {
                breaks.add(new Break(deployment, e.seq(), e.loadId(), "its load is chained already, at entry " + earlier
                        + ": an entry was copied"));
            }
            // Where the entry stored its previous hash (entries written before V11), it must be the hash of the entry before it.
            boolean follows = e.prevHash() == null || e.prevHash().equals(expectedPrev);
            if (!follows) {
                breaks.add(new Break(deployment, e.seq(), e.loadId(), "it does not follow the entry before it (it names previous hash "
                        + shortHash(e.prevHash()) + ", the entry before it is " + shortHash(expectedPrev)
                        + "): an entry before it was removed, inserted or moved"));
            }
            Optional<HashChain.LoadRow> row = rows.get(i);
            // An entry written before V20 stored its load's hash; one written since derives it from the row.
            String loadHash = e.loadHash() != null ? e.loadHash() : row.map(HashChain.LoadRow::hash).orElse(null);
            boolean rowHolds = row.isPresent() && row.get().hash().equals(loadHash);
            if (row.isEmpty()) {
                breaks.add(new Break(deployment, e.seq(), e.loadId(), "its load is no longer in the store: the row was deleted"));
            } else if (!rowHolds) {
                breaks.add(new Break(deployment, e.seq(), e.loadId(), "the load's row differs from what was chained (hash now "
                        + shortHash(row.get().hash()) + ", chained " + shortHash(e.loadHash()) + "): it was changed"));
            }
            // An entry written since V11 covers the plan its load's row names: the row's, when the row still holds.
            String decisionsHash = e.decisionsHash() != null ? e.decisionsHash() : rowHolds ? row.get().planDigest() : null;
            if (e.encoding() == 1) {
                HashChain.Decisions decisions = HashChain.decisions(c, e.loadId());
                if (!decisions.hash().equals(e.decisionsHash())) {
                    breaks.add(new Break(deployment, e.seq(), e.loadId(), "its decisions differ from what was chained (" + decisions.count()
                            + " decisions now" + tensorCount(c, e.loadId()) + ", hash " + shortHash(decisions.hash()) + ", chained "
                            + shortHash(e.decisionsHash()) + "): a decision was changed, deleted or added"));
                }
            } else if (decisionsHash != null) {
                // Each plan is recomputed once per run, however many loads name it.
                HashChain.Decisions plan = plans.get(decisionsHash);
                if (plan == null) {
                    plan = HashChain.plan(c, decisionsHash);
                    plans.put(decisionsHash, plan);
                }
                if (plan.count() == 0) {
                    breaks.add(new Break(deployment, e.seq(), e.loadId(), "its plan " + shortHash(decisionsHash)
                            + " is no longer in the store: its tensors were deleted"));
                } else if (!plan.hash().equals(decisionsHash)) {
                    breaks.add(new Break(deployment, e.seq(), e.loadId(), "its plan differs from what was chained (" + plan.count()
                            + " tensors now" + tensorCount(c, e.loadId()) + ", digest " + shortHash(plan.hash()) + ", chained "
                            + shortHash(decisionsHash) + "): a plan tensor was changed, deleted or added"));
                }
            }
            if (decisionsHash != null
                    && !HashChain.entryHash(e.prevHash() != null ? e.prevHash() : expectedPrev, loadHash, decisionsHash).equals(e.entryHash())) {
                breaks.add(new Break(deployment, e.seq(), e.loadId(), e.prevHash() != null
                        ? "the entry's own hash does not match its contents: the entry was edited"
                        : e.loadHash() == null && nextFollows(entries, rows, i)
                        // The entry after it was chained onto this one's hash as it stands: the entry is as written, its row is not.
                        ? "the load's row differs from what was chained (its entry's hash is not that of the entry before it, its load "
                          + "and its plan, while the entry after it follows it): it was changed"
                        // With no previous hash stored, the mismatch may be in the link or in the entry: both are named.
                        : "it does not follow the entry before it (" + shortHash(expectedPrev) + "), or it was edited: its hash is not "
                          + "that of the entry before it, its load and its plan, so an entry before it was removed, inserted or moved, "
                          + "or its own hash " + (e.loadHash() == null ? "or its load's row " : "") + "was changed"));
            }
            expectedSeq = e.seq() + 1;
            expectedPrev = e.entryHash();
        }
        // Since a mark: complete loads with no link on their row and no entry before V20 (one with a link at or before the
        // mark is the full verify's to find).
        List<String> complete = start.isEmpty()
                ? strings(c, "SELECT l.load_id FROM loads l WHERE l.deployment_id = ? AND l.complete = TRUE ORDER BY l.load_id", deployment)
                : strings(c, "SELECT r.load_id FROM load_rows r WHERE r.deployment_id = ? AND r.complete = TRUE AND r.chain_seq IS NULL AND NOT "
                + "EXISTS (SELECT 1 FROM chain_entries e WHERE e.deployment_id = r.deployment_id AND e.load_id = r.load_id) ORDER BY r.load_id",
                deployment);
        for (String loadId : complete) {
            if (!chainedAt.containsKey(loadId)) {
                breaks.add(new Break(deployment, 0, loadId, "a complete load that was never chained: inserted by hand (or stored before the "
                        + "chain existed: rebuild the projection to chain it)"));
            }
        }
        String head = entries.isEmpty() ? expectedPrev : entries.get(entries.size() - 1).entryHash();
        if (published.isPresent()) {
            // Every head the log still holds must be in the store's chain as published; the first that is not is reported.
            List<ChainHead> disagreeing = new ArrayList<>();
            String firstWhy = null;
            ChainHead first = null;
            long last = entries.isEmpty() ? 0 : entries.get(entries.size() - 1).seq();
            long checkedAfter = start.map(ChainHead::seq).orElse(expectedStart(anchor) - 1);
            for (ChainHead logHead : published.get()) {
                if (logHead.seq() <= checkedAfter) {
                    continue; // pruned, or at or before the mark this check started from: nothing read to compare with
                }
                Optional<HashChain.Entry> atSeq = entries.stream().filter(e -> e.seq() == logHead.seq()).findFirst();
                String why = null;
                if (atSeq.isEmpty()) {
                    why = "the log's published head is entry " + logHead.seq() + " (hash " + shortHash(logHead.entryHash()) + ") but the store's chain "
                            + (last == 0 ? "is empty" : "ends at entry " + last) + ": entries were deleted after they were published";
                } else if (!atSeq.get().entryHash().equals(logHead.entryHash()) || !atSeq.get().loadId().equals(logHead.loadId())) {
                    why = "the store's entry " + logHead.seq() + " hashes to " + shortHash(atSeq.get().entryHash()) + " (load "
                            + atSeq.get().loadId() + ") but the log's published head says " + shortHash(logHead.entryHash()) + " (load "
                            + logHead.loadId() + "): the store was rewritten, hashes and all, after publication";
                }
                if (why != null) {
                    if (first == null) {
                        first = logHead;
                        firstWhy = why;
                    }
                    disagreeing.add(logHead);
                }
            }
            if (first != null) {
                breaks.add(new Break(deployment, first.seq(), first.loadId(), firstWhy
                        + (disagreeing.size() > 1 ? "; " + (disagreeing.size() - 1) + " later published heads disagree too" : "")));
            }
        }
        // Where the next verify may start: the newest published head this check reached and found the same.
        ChainHead verifiedTo = null;
        if (published.isPresent()) {
            Map<Long, HashChain.Entry> bySeq = new HashMap<>();
            entries.forEach(e -> bySeq.put(e.seq(), e));
            for (ChainHead logHead : published.get()) {
                HashChain.Entry e = bySeq.get(logHead.seq());
                if (e != null && e.entryHash().equals(logHead.entryHash()) && e.loadId().equals(logHead.loadId())
                        && (verifiedTo == null || logHead.seq() > verifiedTo.seq())) {
                    verifiedTo = new ChainHead(deployment, e.seq(), e.loadId(), e.entryHash());
                }
            }
            if (verifiedTo == null) {
                verifiedTo = start.orElse(null);
            }
        }
        return new Chain(deployment, entries.size(), head, logConsulted, start.map(ChainHead::seq).orElse(0L), verifiedTo);
    }

    /**
     * Whether the entry after entry {@code i} is the next position and hashes, over its own row and plan as they are now,
     * onto entry {@code i}'s hash as stored: then entry {@code i}'s hash is the one it was written with.
     */
    private static boolean nextFollows(List<HashChain.Entry> entries, List<Optional<HashChain.LoadRow>> rows, int i) {
        if (i + 1 >= entries.size()) {
            return false;
        }
        HashChain.Entry next = entries.get(i + 1);
        Optional<HashChain.LoadRow> row = rows.get(i + 1);
        if (next.seq() != entries.get(i).seq() + 1 || next.prevHash() != null || next.encoding() != HashChain.ENCODING || row.isEmpty()) {
            return false;
        }
        String loadHash = next.loadHash() != null ? next.loadHash() : row.get().hash();
        String plan = next.decisionsHash() != null ? next.decisionsHash() : row.get().planDigest();
        return plan != null && HashChain.entryHash(entries.get(i).entryHash(), loadHash, plan).equals(next.entryHash());
    }

    private static long expectedStart(Optional<ChainHead> anchor) {
        return anchor.map(a -> a.seq() + 1).orElse(1L);
    }

    private static String tensorCount(Connection c, String loadId) throws SQLException {
        List<String> counts = strings(c, "SELECT CAST(tensor_count AS VARCHAR(20)) FROM loads WHERE " + ById.is(""), loadId);
        return counts.isEmpty() ? "" : " of " + counts.get(0) + " tensors";
    }

    static String shortHash(String hash) {
        return hash.length() > 12 ? hash.substring(0, 12) : hash;
    }

    private static List<String> strings(Connection c, String sql, String... params) throws SQLException {
        List<String> values = new ArrayList<>();
        try (PreparedStatement s = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                s.setString(i + 1, params[i]);
            }
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    values.add(rs.getString(1));
                }
            }
        }
        return values;
    }
}
