package dev.placementaudit.store.ingest;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.resolution.ObservationCheck;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.schemas.PlanDigest;
import dev.placementaudit.schemas.UndecodableEventException;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.store.plans.PlanCache;
import dev.placementaudit.store.plans.PlanMatch;
import org.apache.kafka.clients.consumer.ConsumerRecord;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A poll's records as events, each checked against what the store can hold, on the thread that decodes ahead while a
 * batch writes: nothing is written here.
 */
final class RecordDecoder {
    private final String decisionsTopic;
    private final String resolvedTopic;
    private final String observationsTopic;
    private final PlanCache plans;
    private final EventSerde<AllocationDecided> decisions = EventSerde.of(AllocationDecided.class);
    private final EventSerde<LoadResolved> summaries = EventSerde.of(LoadResolved.class);
    private final EventSerde<LoadObserved> observations = EventSerde.of(LoadObserved.class);

    RecordDecoder(String decisionsTopic, String resolvedTopic, String observationsTopic, PlanCache plans) {
        this.decisionsTopic = decisionsTopic;
        this.resolvedTopic = resolvedTopic;
        this.observationsTopic = observationsTopic;
        this.plans = plans;
    }

    List<Decoded> decode(List<ConsumerRecord<byte[], byte[]>> records) {
        List<Decoded> decoded = new ArrayList<>(records.size());
        for (ConsumerRecord<byte[], byte[]> record : records) {
            decoded.add(decode(record));
        }
        checkAgainstKnownPlans(decoded);
        return decoded;
    }

    /**
     * Checks, value by value, each decision that names a plan whose values are at hand against that plan's tensor, and
     * marks those that carry it ({@link Decoded.Decision#checkedPlan}): the comparison runs here, off the batch's
     * transaction. The decisions of a load whose plan is not at hand are marked if they are the whole plan they name
     * ({@link #checkNewPlan}). A decision not marked is checked when written.
     */
    private void checkAgainstKnownPlans(List<Decoded> decoded) {
        Map<String, List<Integer>> unknown = new HashMap<>();
        for (int i = 0; i < decoded.size(); i++) {
            if (decoded.get(i) instanceof Decoded.Decision decision) {
                // Only well-formed digests are keys: a lookup needs no check of its own.
                String digest = decision.event().getPlanDigest();
                List<Object[]> tensors = digest == null ? null : plans.valuesAtHand(digest);
                if (tensors != null && decision.event().getTensorCount() == tensors.size() && PlanMatch.carries(tensors, decision.event())) {
                    decoded.set(i, new Decoded.Decision(decision.record(), decision.event(), digest));
                } else if (digest != null) {
                    unknown.computeIfAbsent(decision.event().getLoadId(), load -> new ArrayList<>()).add(i);
                }
            }
        }
        unknown.values().forEach(load -> checkNewPlan(decoded, load));
    }

    /**
     * A load whose decisions are all in the poll and name a plan not at hand: its decisions are that plan, if they
     * digest to it. Digested here, the batch's writer stores the plan without digesting it again; each decision is
     * marked as carrying it. A load whose decisions are not all here, or that do not digest to what they name, is
     * left to the writer, which stages it or digests it itself.
     */
    private static void checkNewPlan(List<Decoded> decoded, List<Integer> load) {
        List<AllocationDecided> events = load.stream().map(i -> ((Decoded.Decision) decoded.get(i)).event()).toList();
        String digest = PlanMatch.planOf(events);
        List<AllocationDecided> whole = digest == null ? null : PlanMatch.whole(events);
        if (whole != null && PlanDigest.of(whole).equals(digest)) {
            for (int i : load) {
                Decoded.Decision decision = (Decoded.Decision) decoded.get(i);
                decoded.set(i, new Decoded.Decision(decision.record(), decision.event(), digest));
            }
        }
    }

    private Decoded decode(ConsumerRecord<byte[], byte[]> record) {
        try {
            if (record.topic().equals(decisionsTopic)) {
                AllocationDecided event = decisions.decode(record.value());
                String overflow = StoredDecision.overflow(event);
                return overflow == null ? new Decoded.Decision(record, event)
                        : new Decoded.Reject(record, DeadLetter.Reason.UNSTORABLE, "COLUMN_OVERFLOW", "cannot store " + overflow, event.getLoadId());
            }
            if (record.topic().equals(resolvedTopic)) {
                LoadResolved event = summaries.decode(record.value());
                String overflow = StoredLoad.overflow(event);
                return overflow == null ? new Decoded.Summary(record, event)
                        : new Decoded.Reject(record, DeadLetter.Reason.UNSTORABLE, "COLUMN_OVERFLOW", "cannot store " + overflow,
                        event.getLoadId().toString());
            }
            if (record.topic().equals(observationsTopic)) {
                LoadObserved event = observations.decode(record.value());
                String overflow = ObservationCheck.problem(event);
                // Dead-lettered without its load id: a dead letter that names a load marks the load as never to complete, and
                // an observation is no part of its load (the load completes, and stays complete, without one).
                return overflow == null ? new Decoded.Observation(record, event)
                        : new Decoded.Reject(record, DeadLetter.Reason.UNSTORABLE, "COLUMN_OVERFLOW", "cannot store the observation of load "
                        + event.getLoadId() + ": " + overflow);
            }
            throw new IllegalArgumentException("record from unexpected topic " + record.topic());
        } catch (UndecodableEventException e) {
            return new Decoded.Reject(record, DeadLetter.Reason.UNDECODABLE, e.reason().name(), e.getMessage());
        }
    }
}
