package dev.placementaudit.schemas;

import dev.placementaudit.events.Deployment;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ModelRef;
import dev.placementaudit.events.TensorInfo;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecordBuilder;
import org.apache.avro.message.BinaryMessageEncoder;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LoadLayoutsTest {
    private final EventSerde<ModelLoaded> serde = EventSerde.of(ModelLoaded.class);
    private final LoadLayouts layouts = new LoadLayouts(8);

    @Test
    void aLoadWithARememberedLayoutSharesItsObjectsAndDecodesTheRestAsAvroDoes() {
        LoadLayouts.Read first = layouts.read(serde.encode(Samples.modelLoaded()));
        assertThat(first.known()).as("nothing remembered yet").isFalse();
        assertThat(first.remember()).isTrue();

        ModelLoaded other = ModelLoaded.newBuilder(Samples.modelLoaded()).setLoadId(UUID.randomUUID())
                .setDeployment(Deployment.newBuilder().setId("chat-us-2").setCluster("us-east").setHost("node-99").build())
                .setRelease("2026.12.1").setLabels(Map.of("region", "us", "tier", "gold")).setProducer(null)
                .setModel(ModelRef.newBuilder(Samples.modelLoaded().getModel()).setSha256(null).build()).build();
        byte[] bytes = serde.encode(other);
        LoadLayouts.Read second = layouts.read(bytes);

        assertThat(second.known()).isTrue();
        assertThat(second.load()).isEqualTo(serde.decode(bytes)).isEqualTo(other);
        assertThat(second.load().getTensors()).isSameAs(first.load().getTensors());
        assertThat(second.load().getPlatform()).isSameAs(first.load().getPlatform());
        assertThat(second.load().getProfile()).isSameAs(first.load().getProfile());
        assertThat(second.load().getLoadId()).isInstanceOf(UUID.class);
        assertThat(second.load().getRelease()).isInstanceOf(String.class);
    }

    @Test
    void aLayoutThatDiffersByOneValueIsDecodedWhole() {
        layouts.read(serde.encode(Samples.modelLoaded())).remember();
        ModelLoaded changed = withTensor(Samples.modelLoaded(), 1, TensorInfo.newBuilder(Samples.modelLoaded().getTensors().get(1)).setStoredBytes(8_193).build());

        LoadLayouts.Read read = layouts.read(serde.encode(changed));

        assertThat(read.known()).isFalse();
        assertThat(read.load()).isEqualTo(changed);
        assertThat(read.load().getTensors()).isNotSameAs(layouts.read(serde.encode(Samples.modelLoaded())).load().getTensors());
    }

    @Test
    void onlyWhatTheCallerRemembersIsKnown() {
        byte[] bytes = serde.encode(Samples.modelLoaded());

        assertThat(layouts.read(bytes).known()).isFalse();
        assertThat(layouts.read(bytes).known()).as("read twice, never remembered").isFalse();
        assertThat(layouts.remembered()).isZero();
    }

    @Test
    void theFirstToRememberALayoutIsTheOneWhoseObjectsAreShared() {
        byte[] bytes = serde.encode(Samples.modelLoaded());
        LoadLayouts.Read one = layouts.read(bytes);
        LoadLayouts.Read other = layouts.read(bytes);

        assertThat(one.remember()).isTrue();
        assertThat(other.remember()).as("the same bytes, remembered already").isFalse();
        LoadLayouts.Read later = layouts.read(bytes);
        assertThat(later.load().getTensors()).isSameAs(one.load().getTensors());
        assertThat(later.remember()).as("a known layout").isFalse();
        assertThat(layouts.remembered()).isEqualTo(1);
    }

    @Test
    void aLoadWrittenWithAnEarlierSchemaIsDecodedWholeAndNotRemembered() {
        Schema v1 = EventType.MODEL_LOADED.history().get(0);
        byte[] bytes = encodeGeneric(v1, new GenericRecordBuilder(v1)
                .set("loadId", Samples.LOAD_ID.toString()).set("occurredAt", Samples.AT.toEpochMilli())
                .set("deployment", new GenericRecordBuilder(v1.getField("deployment").schema()).set("id", "d").set("cluster", "c").set("host", "h").build())
                .set("release", "r")
                .set("model", new GenericRecordBuilder(v1.getField("model").schema()).set("id", "m").set("name", "M").set("sizeBytes", 1L)
                        .set("fileFormat", new GenericData.EnumSymbol(v1.getField("model").schema().getField("fileFormat").schema(), "GGUF")).build())
                .set("platform", new GenericRecordBuilder(v1.getField("platform").schema()).set("name", "jvm").set("supportsMappedFiles", true)
                        .set("supportsOffHeap", true).set("mappedServableEncodings", List.of("Q4_K")).build())
                .set("profile", new GenericRecordBuilder(v1.getField("profile").schema()).set("name", "desktop").set("offHeapThresholdBytes", 1L)
                        .set("reserveBytes", 0L).set("weightsMapped", false).set("strict", false).build())
                .set("tensors", List.of(new GenericRecordBuilder(v1.getField("tensors").schema().getElementType()).set("name", "w").set("dtype", "FP32")
                        .set("encoding", "Q4_K").set("shape", List.of(256L)).set("elementCount", 256L).set("storedBytes", 144L).build()))
                .build());

        LoadLayouts.Read read = layouts.read(bytes);
        assertThat(read.remember()).isFalse();

        assertThat(read.load()).isEqualTo(serde.decode(bytes));
        assertThat(read.known()).isFalse();
        assertThat(layouts.remembered()).as("no layout bytes of the current schema to compare").isZero();
    }

    @Test
    void aMalformedLoadIdBesideAKnownLayoutIsRefusedAsTheWholeDecodeRefusesIt() {
        layouts.read(serde.encode(Samples.modelLoaded())).remember();
        byte[] bytes = serde.encode(Samples.modelLoaded());
        // The load id's 36 characters follow the 10-byte header and their length (one byte).
        byte[] notAUuid = "z".repeat(36).getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(notAUuid, 0, bytes, 11, 36);

        assertThatThrownBy(() -> layouts.read(bytes))
                .isInstanceOfSatisfying(UndecodableEventException.class,
                        e -> assertThat(e.reason()).isEqualTo(UndecodableEventException.Cause.CORRUPT_BODY));
        assertThatThrownBy(() -> serde.decode(bytes)).isInstanceOf(UndecodableEventException.class);
    }

    @Test
    void brokenBytesFailWithTheWholeDecodesReason() {
        layouts.read(serde.encode(Samples.modelLoaded())).remember();
        byte[] bytes = serde.encode(Samples.modelLoaded());

        for (int cut = 0; cut < bytes.length; cut++) {
            byte[] truncated = Arrays.copyOf(bytes, cut);
            assertThatThrownBy(() -> layouts.read(truncated)).as("cut at %d", cut).isInstanceOf(UndecodableEventException.class);
        }
        byte[] otherType = EventSerde.of(dev.placementaudit.events.AllocationDecided.class).encode(Samples.allocationDecided());
        assertThatThrownBy(() -> layouts.read(otherType))
                .isInstanceOfSatisfying(UndecodableEventException.class,
                        e -> assertThat(e.reason()).isEqualTo(UndecodableEventException.Cause.WRONG_EVENT_TYPE));
    }

    @Test
    void everyBytePatternOfTheRestDecodesAsTheWholeDecodeDoes() {
        layouts.read(serde.encode(Samples.modelLoaded())).remember();
        byte[] good = serde.encode(Samples.modelLoaded());
        // Every single-byte change after the header, in the layout or around it: the same load, or the same refusal, as
        // the whole decode gives.
        int knownReads = 0;
        for (int at = 10; at < good.length; at++) {
            for (int value : new int[] {0x00, 0x01, 0x7f, 0x80, 0xff}) {
                byte[] bytes = good.clone();
                bytes[at] = (byte) value;
                Object whole;
                try {
                    whole = serde.decode(bytes);
                } catch (UndecodableEventException e) {
                    whole = e.reason();
                }
                Object fast;
                try {
                    LoadLayouts.Read read = layouts.read(bytes);
                    fast = read.load();
                    knownReads += read.known() ? 1 : 0;
                } catch (UndecodableEventException e) {
                    fast = e.reason();
                }
                assertThat(fast).as("byte %d set to %02x", at, value).isEqualTo(whole);
            }
        }
        assertThat(knownReads).as("changes that leave a valid load beside the known layout").isGreaterThan(100);
    }

    @Test
    void pastItsCapacityTheMemoryStartsOver() {
        LoadLayouts small = new LoadLayouts(2);
        for (int i = 0; i < 3; i++) {
            ModelLoaded load = withTensor(Samples.modelLoaded(), 0, TensorInfo.newBuilder(Samples.modelLoaded().getTensors().get(0)).setFileOffset(4_096L + i).build());
            assertThat(small.read(serde.encode(load)).remember()).isTrue();
        }

        assertThat(small.remembered()).isEqualTo(1);
        assertThatThrownBy(() -> new LoadLayouts(0)).isInstanceOf(IllegalArgumentException.class);
    }

    private static ModelLoaded withTensor(ModelLoaded load, int index, TensorInfo tensor) {
        List<TensorInfo> tensors = new ArrayList<>(load.getTensors());
        tensors.set(index, tensor);
        return ModelLoaded.newBuilder(load).setTensors(tensors).build();
    }

    private static byte[] encodeGeneric(Schema schema, Object record) {
        try {
            ByteBuffer buffer = new BinaryMessageEncoder<>(GenericData.get(), schema).encode(record);
            byte[] bytes = new byte[buffer.remaining()];
            buffer.get(bytes);
            return bytes;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
