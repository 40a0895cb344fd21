package dev.placementaudit.schemas;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.PlacementAlert;
import dev.placementaudit.events.PlacementIncident;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.generic.GenericRecordBuilder;
import org.apache.avro.message.BinaryMessageEncoder;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class EventSerdeTest {
    private final EventSerde<ModelLoaded> loads = EventSerde.of(ModelLoaded.class);

    @Test
    void roundTripsEveryEventType() {
        assertThat(loads.decode(loads.encode(Samples.modelLoaded()))).isEqualTo(Samples.modelLoaded());
        EventSerde<AllocationDecided> decisions = EventSerde.of(AllocationDecided.class);
        assertThat(decisions.decode(decisions.encode(Samples.allocationDecided()))).isEqualTo(Samples.allocationDecided());
        EventSerde<LoadResolved> resolved = EventSerde.of(LoadResolved.class);
        assertThat(resolved.decode(resolved.encode(Samples.loadResolved()))).isEqualTo(Samples.loadResolved());
        EventSerde<PlacementAlert> alerts = EventSerde.of(PlacementAlert.class);
        assertThat(alerts.decode(alerts.encode(Samples.placementAlert()))).isEqualTo(Samples.placementAlert());
        EventSerde<PlacementIncident> incidents = EventSerde.of(PlacementIncident.class);
        assertThat(incidents.decode(incidents.encode(Samples.placementIncident()))).isEqualTo(Samples.placementIncident());
    }

    @Test
    void writesSingleObjectEncodingWithTheCurrentFingerprint() {
        byte[] bytes = loads.encode(Samples.modelLoaded());

        assertThat(bytes[0]).isEqualTo((byte) 0xC3);
        assertThat(bytes[1]).isEqualTo((byte) 0x01);
        long fingerprint = ByteBuffer.wrap(bytes, 2, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
        assertThat(fingerprint).isEqualTo(EventSerde.fingerprint(ModelLoaded.getClassSchema()));
    }

    @Test
    void writesExactlyTheBytesOfAvrosOwnMessageEncoder() {
        assertSameBytesAsAvro(loads, Samples.modelLoaded());
        assertSameBytesAsAvro(EventSerde.of(AllocationDecided.class), Samples.allocationDecided());
        assertSameBytesAsAvro(EventSerde.of(LoadResolved.class), Samples.loadResolved());
        assertSameBytesAsAvro(EventSerde.of(PlacementAlert.class), Samples.placementAlert());
        assertSameBytesAsAvro(EventSerde.of(PlacementIncident.class), Samples.placementIncident());
    }

    @Test
    void encodingAgainOnTheSameThreadLeavesNothingOfTheEarlierRecord() {
        EventSerde<AllocationDecided> decisions = EventSerde.of(AllocationDecided.class);
        AllocationDecided longer = AllocationDecided.newBuilder(Samples.allocationDecided())
                .setReason("x".repeat(5_000)).build();

        byte[] first = decisions.encode(longer);
        byte[] second = decisions.encode(Samples.allocationDecided());

        assertThat(first.length).isGreaterThan(5_000);
        assertThat(decisions.decode(second)).isEqualTo(Samples.allocationDecided());
        assertThat(second).isEqualTo(avroBytes(AllocationDecided.getClassSchema(), Samples.allocationDecided()));
    }

    /** A failed encode must leave nothing behind for the next record on the thread: the encoder buffers. */
    @Test
    void aRecordThatFailsToEncodeLeavesNothingInTheNextOne() {
        EventSerde<AllocationDecided> decisions = EventSerde.of(AllocationDecided.class);
        AllocationDecided broken = AllocationDecided.newBuilder(Samples.allocationDecided()).build();
        broken.put("tensorName", null);

        assertThatThrownBy(() -> decisions.encode(broken)).isInstanceOf(org.apache.kafka.common.errors.SerializationException.class)
                .hasMessageContaining("AllocationDecided");
        assertThat(decisions.encode(Samples.allocationDecided()))
                .isEqualTo(avroBytes(AllocationDecided.getClassSchema(), Samples.allocationDecided()));
    }

    @Test
    void aBodyTheCallerWritesGetsTheHeaderOfTheCurrentSchema() {
        EventSerde<AllocationDecided> decisions = EventSerde.of(AllocationDecided.class);
        org.apache.avro.specific.SpecificDatumWriter<AllocationDecided> writer = new org.apache.avro.specific.SpecificDatumWriter<>(AllocationDecided.class);

        byte[] bytes = decisions.encode(out -> writer.write(Samples.allocationDecided(), out));

        assertThat(bytes).isEqualTo(avroBytes(AllocationDecided.getClassSchema(), Samples.allocationDecided()));
    }

    /** A body can fail half-written, as a record can; what it wrote must not open the thread's next record. */
    @Test
    void aBodyThatFailsHalfWayLeavesNothingInTheNextRecord() {
        EventSerde<AllocationDecided> decisions = EventSerde.of(AllocationDecided.class);

        assertThatThrownBy(() -> decisions.encode(out -> {
            out.writeString("a decision id that never gets the rest of its record");
            throw new NullPointerException("no tensor name");
        })).isInstanceOf(org.apache.kafka.common.errors.SerializationException.class).hasMessageContaining("no tensor name");
        assertThat(decisions.encode(Samples.allocationDecided()))
                .isEqualTo(avroBytes(AllocationDecided.getClassSchema(), Samples.allocationDecided()));
    }

    @Test
    void decodesARecordWrittenWithTheFirstModelLoadedSchema() {
        Schema v1 = EventType.MODEL_LOADED.history().get(0);
        GenericRecord old = v1Record(v1);
        byte[] bytes = encodeGeneric(v1, old);

        ModelLoaded decoded = loads.decode(bytes);

        assertThat(decoded.getLoadId()).isEqualTo(Samples.LOAD_ID);
        assertThat(decoded.getOccurredAt()).isEqualTo(Samples.AT);
        assertThat(decoded.getDeployment().getId()).isEqualTo("chat-eu-1");
        assertThat(decoded.getTensors()).singleElement().satisfies(t -> {
            assertThat(t.getEncoding()).isEqualTo("Q4_K");
            assertThat(t.getForm()).isNull();
        });
        assertThat(decoded.getLabels()).as("v2 default").isEmpty();
        assertThat(decoded.getProducer()).as("v2 default").isNull();
    }

    @Test
    void refusesBytesThatAreNotSingleObjectEncoded() {
        byte[] garbage = "definitely not avro".getBytes(StandardCharsets.UTF_8);

        assertThatThrownBy(() -> loads.decode(garbage))
                .isInstanceOfSatisfying(UndecodableEventException.class,
                        e -> assertThat(e.reason()).isEqualTo(UndecodableEventException.Cause.NOT_SINGLE_OBJECT_ENCODED))
                .hasMessageContaining("19 bytes starting 64 65");
        assertThatThrownBy(() -> loads.decode(new byte[0])).isInstanceOf(UndecodableEventException.class);
    }

    @Test
    void refusesAnUnknownSchemaFingerprintNamingIt() {
        byte[] bytes = loads.encode(Samples.modelLoaded());
        bytes[2] ^= 0x5A;

        assertThatThrownBy(() -> loads.decode(bytes))
                .isInstanceOfSatisfying(UndecodableEventException.class,
                        e -> assertThat(e.reason()).isEqualTo(UndecodableEventException.Cause.UNKNOWN_SCHEMA_FINGERPRINT))
                .hasMessageContaining("fingerprint").hasMessageContaining("knows " + EventType.MODEL_LOADED.history().size() + " versions");
    }

    @Test
    void refusesATruncatedBody() {
        byte[] bytes = loads.encode(Samples.modelLoaded());
        byte[] truncated = Arrays.copyOf(bytes, bytes.length / 2);

        assertThatThrownBy(() -> loads.decode(truncated))
                .isInstanceOfSatisfying(UndecodableEventException.class,
                        e -> assertThat(e.reason()).isEqualTo(UndecodableEventException.Cause.CORRUPT_BODY));
    }

    @Test
    void refusesAnotherEventTypeOnTheWrongTopic() {
        byte[] decision = EventSerde.of(AllocationDecided.class).encode(Samples.allocationDecided());

        assertThatThrownBy(() -> loads.decode(decision))
                .isInstanceOfSatisfying(UndecodableEventException.class,
                        e -> assertThat(e.reason()).isEqualTo(UndecodableEventException.Cause.WRONG_EVENT_TYPE))
                .hasMessageContaining("AllocationDecided");
    }

    @Test
    void kafkaInterfacePassesNullsThrough() {
        assertThat(loads.serialize("model-loads", null)).isNull();
        assertThat(loads.deserialize("model-loads", null)).isNull();
        assertThat(loads.deserialize("model-loads", loads.serialize("model-loads", Samples.modelLoaded())))
                .isEqualTo(Samples.modelLoaded());
    }

    private static <T extends org.apache.avro.specific.SpecificRecord> void assertSameBytesAsAvro(EventSerde<T> serde, T event) {
        assertThat(serde.encode(event)).as(event.getSchema().getName()).isEqualTo(avroBytes(event.getSchema(), event));
    }

    /** What Avro's reference single-object encoder writes, through the reflective (not custom-coder) path. */
    private static byte[] avroBytes(Schema schema, Object event) {
        try {
            ByteBuffer buffer = new BinaryMessageEncoder<>(new org.apache.avro.specific.SpecificData(), schema).encode(event);
            byte[] bytes = new byte[buffer.remaining()];
            buffer.get(bytes);
            return bytes;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static GenericRecord v1Record(Schema v1) {
        Schema deployment = v1.getField("deployment").schema();
        Schema model = v1.getField("model").schema();
        Schema platform = v1.getField("platform").schema();
        Schema profile = v1.getField("profile").schema();
        Schema tensor = v1.getField("tensors").schema().getElementType();
        Schema fileFormat = model.getField("fileFormat").schema();
        return new GenericRecordBuilder(v1)
                .set("loadId", Samples.LOAD_ID.toString())
                .set("occurredAt", Samples.AT.toEpochMilli())
                .set("deployment", new GenericRecordBuilder(deployment).set("id", "chat-eu-1").set("cluster", "eu-west").set("host", "node-07").build())
                .set("release", "2026.10.1")
                .set("model", new GenericRecordBuilder(model).set("id", "m").set("name", "M").set("sizeBytes", 1L)
                        .set("fileFormat", new GenericData.EnumSymbol(fileFormat, "GGUF")).build())
                .set("platform", new GenericRecordBuilder(platform).set("name", "jvm").set("supportsMappedFiles", true)
                        .set("supportsOffHeap", true).set("mappedServableEncodings", List.of("Q4_K")).build())
                .set("profile", new GenericRecordBuilder(profile).set("name", "desktop").set("offHeapThresholdBytes", 262_144L)
                        .set("reserveBytes", 0L).set("weightsMapped", false).set("strict", false).build())
                .set("tensors", List.of(new GenericRecordBuilder(tensor).set("name", "w").set("dtype", "FP32")
                        .set("encoding", "Q4_K").set("shape", List.of(256L)).set("elementCount", 256L)
                        .set("storedBytes", 144L).build()))
                .build();
    }

    private static byte[] encodeGeneric(Schema schema, GenericRecord record) {
        try {
            ByteBuffer buffer = new BinaryMessageEncoder<GenericRecord>(GenericData.get(), schema).encode(record);
            byte[] bytes = new byte[buffer.remaining()];
            buffer.get(bytes);
            return bytes;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
