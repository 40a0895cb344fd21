package dev.placementaudit.resolution;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.schemas.EventSerde;

import java.util.Collections;
import java.util.List;

/**
 * One decision per tensor, in tensor order, and the summary that marks the load complete. The decisions are held
 * as the single-object encoded records the worker sends; {@link #decisions()} reads them back as events.
 */
public final class ResolvedLoad {
    private static final EventSerde<AllocationDecided> DECISIONS = EventSerde.of(AllocationDecided.class);

    private final List<byte[]> encodedDecisions;
    private final LoadResolved summary;

    ResolvedLoad(List<byte[]> encodedDecisions, LoadResolved summary) {
        this.encodedDecisions = Collections.unmodifiableList(encodedDecisions);
        this.summary = summary;
    }

    /** Each decision's record value, as it goes to the decisions topic. */
    public List<byte[]> encodedDecisions() {
        return encodedDecisions;
    }

    /** The decisions as a consumer of the decisions topic reads them: decoded from {@link #encodedDecisions()}. */
    public List<AllocationDecided> decisions() {
        return encodedDecisions.stream().map(DECISIONS::decode).toList();
    }

    public LoadResolved summary() {
        return summary;
    }
}
