package dev.placementaudit.worker.pipeline;

import dev.placementaudit.resolution.LoadIdentity;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.pipeline.Transactions.Outcome;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;

/** The sending phase: a prepared record's outputs, or its dead letter, sent in the transaction open on the producer in turn. */
final class Outputs {
    private static final Logger LOG = LoggerFactory.getLogger(Outputs.class);

    private final WorkerConfig config;
    private final Commits commits;
    private final LoadResolution resolution;
    private final Clock clock;
    /** Null when the worker remembers no loads ({@code worker.conflicts.window} 0). */
    private final RecentLoads recent;

    Outputs(WorkerConfig config, Commits commits, LoadResolution resolution, Clock clock) {
        this.config = config;
        this.commits = commits;
        this.resolution = resolution;
        this.clock = clock;
        this.recent = config.conflictWindow() > 0 ? new RecentLoads(config.conflictWindow()) : null;
    }

    /** Sends in log order (the loop's and isolation's one path): a load id that came lately with other content is dead-lettered here. */
    void send(Prepared prepared, Outcome outcome) {
        if (prepared.reason() != null) {
            deadLetter(prepared.record(), prepared.reason(), prepared.detail(), prepared.field(), prepared.error(), outcome);
            return;
        }
        String conflict = recent == null ? null : recent.conflict(prepared.summary());
        if (conflict != null) {
            deadLetter(prepared.record(), DeadLetter.Reason.INVALID_CONTENT, LoadIdentity.CONFLICT, "loadId", conflict, outcome);
            return;
        }
        for (ProducerRecord<byte[], byte[]> output : prepared.outputs()) {
            commits.producer().send(output);
        }
        outcome.resolved(prepared.summary());
    }

    void deadLetter(ConsumerRecord<byte[], byte[]> record, DeadLetter.Reason reason, String detail, String field, String error, Outcome outcome) {
        commits.producer().send(DeadLetter.of(config.deadLetterTopic(), record, reason, detail, field, error, resolution.resolverVersion(),
                clock.instant()));
        outcome.deadLettered(reason);
        LOG.warn("dead-lettered {}-{}@{} as {}/{}: {}", record.topic(), record.partition(), record.offset(), reason, detail, error);
    }
}
