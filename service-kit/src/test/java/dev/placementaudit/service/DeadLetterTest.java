package dev.placementaudit.service;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Instant;

import static org.assertj.core.api.Assertions.assertThat;

/** A dead letter keeps the value whole; its key and its headers are bounded, so one hostile id cannot bloat the DLQ. */
class DeadLetterTest {
    private static String header(ProducerRecord<byte[], byte[]> record, String name) {
        return new String(record.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
    }

    @Test
    void aHugeKeyIsCutToItsBoundAndItsLengthIsKept() {
        byte[] key = "d".repeat(300_000).getBytes(StandardCharsets.UTF_8);
        byte[] value = new byte[400_000];
        ConsumerRecord<byte[], byte[]> source = new ConsumerRecord<>("model-loads", 2, 17L, key, value);

        ProducerRecord<byte[], byte[]> dead = DeadLetter.of("model-loads.dlq", source, DeadLetter.Reason.INVALID_CONTENT, "TOO_LONG",
                "deployment.id", "x".repeat(10_000), "test", Instant.EPOCH);

        assertThat(dead.key()).hasSize(DeadLetter.MAX_KEY_BYTES);
        assertThat(header(dead, DeadLetter.KEY_LENGTH)).isEqualTo("300000");
        assertThat(dead.value()).isSameAs(value);
        assertThat(header(dead, DeadLetter.ERROR)).hasSize(DeadLetter.MAX_HEADER_CHARS).endsWith("...");
        assertThat(header(dead, DeadLetter.SOURCE_OFFSET)).isEqualTo("17");
    }

    @Test
    void aShortKeyIsKeptAsItIs() {
        ConsumerRecord<byte[], byte[]> source = new ConsumerRecord<>("t", 0, 0L, "phone-7".getBytes(StandardCharsets.UTF_8), new byte[1]);

        ProducerRecord<byte[], byte[]> dead = DeadLetter.of("t.dlq", source, DeadLetter.Reason.UNDECODABLE, "CORRUPT_BODY", null, "bad", "test",
                Instant.EPOCH);

        assertThat(new String(dead.key(), StandardCharsets.UTF_8)).isEqualTo("phone-7");
        assertThat(dead.headers().lastHeader(DeadLetter.KEY_LENGTH)).isNull();
    }
}
