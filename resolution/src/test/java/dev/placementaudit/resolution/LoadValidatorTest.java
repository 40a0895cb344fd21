package dev.placementaudit.resolution;

import dev.placementaudit.events.EncodingRequestKind;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.PlatformCapabilities;
import dev.placementaudit.events.ProfileSettings;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.events.TensorResidency;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.schemas.LoadLayouts;
import dev.placementaudit.testkit.SampleEvents;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

import static dev.placementaudit.resolution.InvalidLoadException.Code;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LoadValidatorTest {
    private final LoadValidator validator = new LoadValidator(1_000);

    @Test
    void acceptsAWellFormedLoadKeepingTensorOrder() {
        ValidLoad valid = validator.validate(SampleEvents.edgeLoad("d", "r1", 2));

        assertThat(valid.tensors()).extracting(t -> t.name())
                .containsExactly("token_embd.weight", "blk.0.attn_q.weight", "blk.1.attn_q.weight", "output_norm.weight");
        assertThat(valid.policy().profile().weightsMapped()).isTrue();
        assertThat(valid.policy().platform().mappedServableEncodings()).hasSize(8);
    }

    @Test
    void refusesALoadWithoutTensors() {
        assertInvalid(SampleEvents.load("d", "r", List.of()), Code.EMPTY_LOAD, "tensors");
    }

    @Test
    void refusesMoreTensorsThanConfigured() {
        assertThatThrownBy(() -> new LoadValidator(2).validate(SampleEvents.edgeLoad("d", "r", 2)))
                .isInstanceOfSatisfying(InvalidLoadException.class, e -> assertThat(e.code()).isEqualTo(Code.TOO_MANY_TENSORS))
                .hasMessageContaining("4 tensors exceed worker.max.tensors.per.load=2");
    }

    @Test
    void refusesDuplicateTensorNames() {
        assertInvalid(withTensors(t -> t.add(t.get(1))), Code.DUPLICATE_TENSOR, "tensors[5].name");
    }

    @Test
    void refusesNegativeSizes() {
        assertInvalid(withTensor(1, t -> t.setElementCount(-1)), Code.NEGATIVE_SIZE, "tensors[1] 'blk.0.attn_q.weight'.elementCount");
        assertInvalid(withTensor(1, t -> t.setStoredBytes(-5)), Code.NEGATIVE_SIZE, "tensors[1] 'blk.0.attn_q.weight'.storedBytes");
        assertInvalid(withTensor(1, t -> t.setRuntime(dev.placementaudit.events.RuntimeDecision.newBuilder()
                        .setDomain(dev.placementaudit.events.RuntimeDomain.HOST_HEAP).setResidentBytes(-1).build())),
                Code.NEGATIVE_SIZE, "tensors[1] 'blk.0.attn_q.weight'.runtime.residentBytes");
    }

    @Test
    void refusesAnElementCountTheShapeDoesNotHold() {
        InvalidLoadException e = assertInvalid(withTensor(1, t -> t.setShape(List.of(1024L, 512L))), Code.SHAPE_MISMATCH,
                "tensors[1] 'blk.0.attn_q.weight'.elementCount");

        assertThat(e).hasMessageContaining("is 1048576 but shape [1024, 512] holds 524288");
    }

    @Test
    void acceptsBothConventionsForAScalar() {
        validator.validate(withTensor(4, t -> t.setShape(List.of()).setElementCount(1).setStoredBytes(4)));
        validator.validate(withTensor(4, t -> t.setShape(List.of()).setElementCount(0).setStoredBytes(0)));
    }

    @Test
    void refusesAnUnknownEncodingNamingIt() {
        InvalidLoadException e = assertInvalid(withTensor(1, t -> t.setEncoding("Q4_1")), Code.UNKNOWN_ENCODING,
                "tensors[1] 'blk.0.attn_q.weight'.encoding");

        assertThat(e).hasMessageContaining("'Q4_1'");
    }

    @Test
    void refusesAnUnknownDtype() {
        assertInvalid(withTensor(0, t -> t.setDtype("F8_E4M3")), Code.UNKNOWN_DTYPE, "tensors[0] 'token_embd.weight'.dtype");
    }

    @Test
    void refusesStoredBytesThatContradictTheEncoding() {
        InvalidLoadException e = assertInvalid(withTensor(1, t -> t.setStoredBytes(600_000)), Code.BYTES_MISMATCH,
                "tensors[1] 'blk.0.attn_q.weight'.storedBytes");

        assertThat(e).hasMessageContaining("Float32/Q4_K prices 1048576 elements at 589824");
    }

    @Test
    void opaqueEncodingsArePricedByTheirStoredBytes() {
        ValidLoad valid = validator.validate(withTensor(1, t -> t.setEncoding("Opaque:Q3_K").setStoredBytes(450_560)));

        assertThat(valid.tensors().get(1).bytes()).isEqualTo(450_560);
    }

    @Test
    void refusesAFormWhoseTargetDoesNotFitItsRequest() {
        assertInvalid(withTensor(1, t -> t.setForm(SampleEvents.form(EncodingRequestKind.DEQUANTIZE_TO, "Q4_K", TensorResidency.MAPPED))),
                Code.BAD_FORM, "tensors[1] 'blk.0.attn_q.weight'.form.target");
        assertInvalid(withTensor(1, t -> t.setForm(SampleEvents.form(EncodingRequestKind.KEEP, "FP32", TensorResidency.MAPPED))),
                Code.BAD_FORM, "tensors[1] 'blk.0.attn_q.weight'.form.target");
        assertInvalid(withTensor(1, t -> t.setForm(SampleEvents.form(EncodingRequestKind.REQUANTIZE_TO, "Opaque:Q3_K", TensorResidency.HEAP))),
                Code.BAD_FORM, "tensors[1] 'blk.0.attn_q.weight'.form.target");
    }

    @Test
    void refusesANonPositiveThreshold() {
        ModelLoaded original = SampleEvents.edgeLoad("d", "r", 1);
        ModelLoaded load = ModelLoaded.newBuilder(original)
                .setProfile(ProfileSettings.newBuilder(original.getProfile()).setOffHeapThresholdBytes(0).build()).build();

        assertInvalid(load, Code.BAD_PROFILE, "profile");
    }

    @Test
    void refusesAnUnknownServableEncoding() {
        ModelLoaded original = SampleEvents.edgeLoad("d", "r", 1);
        ModelLoaded load = ModelLoaded.newBuilder(original).setPlatform(PlatformCapabilities.newBuilder(original.getPlatform())
                .setMappedServableEncodings(List.of("Q4_K", "Q9_Z")).build()).build();

        assertInvalid(load, Code.BAD_PLATFORM, "platform.mappedServableEncodings[1]");
    }

    @Test
    void refusesABlankDeployment() {
        ModelLoaded load = SampleEvents.edgeLoad(" ", "r", 1);

        assertInvalid(load, Code.MISSING_FIELD, "deployment.id");
    }

    @Test
    void refusesABlankTensorName() {
        assertInvalid(withTensor(1, t -> t.setName(" ")), Code.MISSING_FIELD, "tensors[1].name");
    }

    @Test
    void refusesANulInATensorNameNamingTheFieldAndShowingTheValueEscaped() {
        InvalidLoadException e = assertInvalid(withTensor(1, t -> t.setName("blk.0.attn_q\u0000.weight")), Code.UNSTORABLE_TEXT, "tensors[1].name");

        assertThat(e.getMessage()).contains("control character U+0000 at index 12").contains("'blk.0.attn_q\\u0000.weight'");
    }

    @Test
    void refusesControlCharactersAndUnpairedSurrogatesInAnyStringButKeepsTabsAndEmoji() {
        ModelLoaded base = SampleEvents.edgeLoad("d", "r", 3);
        assertInvalid(ModelLoaded.newBuilder(base).setRelease("r\u001b[31m").build(), Code.UNSTORABLE_TEXT, "release");
        assertInvalid(ModelLoaded.newBuilder(base).setLabels(java.util.Map.of("team", "infra\uD800")).build(), Code.UNSTORABLE_TEXT, "labels[team]");
        assertInvalid(ModelLoaded.newBuilder(base).setLabels(java.util.Map.of("te\u0007am", "x")).build(), Code.UNSTORABLE_TEXT, "labels (a key)");
        assertInvalid(withTensor(2, t -> t.setEncoding("Q4_K\uDC00")), Code.UNSTORABLE_TEXT, "tensors[2].encoding");

        validator.validate(ModelLoaded.newBuilder(base).setRelease("r1\t\uD83D\uDE80").build());
    }

    @Test
    void refusesWhatTheStoresColumnsCannotHold() {
        ModelLoaded base = SampleEvents.edgeLoad("d", "r", 3);
        InvalidLoadException id = assertInvalid(ModelLoaded.newBuilder(base).setDeployment(dev.placementaudit.events.Deployment.newBuilder(base.getDeployment())
                .setId("d".repeat(300_000)).build()).build(), Code.TOO_LONG, "deployment.id");
        assertThat(id.getMessage()).contains("300000 characters, at most 200 (loads.deployment_id)").hasSizeLessThan(400);
        assertInvalid(withTensor(1, t -> t.setName("w".repeat(1001))), Code.TOO_LONG, "tensors[1].name");
    }

    @Test
    void refusesAShaThatIsNot64HexCharactersAndATimeOutsideTheRange() {
        ModelLoaded base = SampleEvents.edgeLoad("d", "r", 3);
        assertInvalid(ModelLoaded.newBuilder(base).setModel(dev.placementaudit.events.ModelRef.newBuilder(base.getModel()).setSha256("abc").build())
                .build(), Code.BAD_SHA256, "model.sha256");
        assertInvalid(ModelLoaded.newBuilder(base).setModel(dev.placementaudit.events.ModelRef.newBuilder(base.getModel()).setSha256("g".repeat(64))
                .build()).build(), Code.BAD_SHA256, "model.sha256");
        assertInvalid(ModelLoaded.newBuilder(base).setOccurredAt(java.time.Instant.ofEpochMilli(Long.MAX_VALUE / 2)).build(),
                Code.TIME_OUT_OF_RANGE, "occurredAt");
        assertInvalid(ModelLoaded.newBuilder(base).setOccurredAt(java.time.Instant.parse("1969-12-31T23:59:59Z")).build(),
                Code.TIME_OUT_OF_RANGE, "occurredAt");
    }

    private InvalidLoadException assertInvalid(ModelLoaded load, Code code, String field) {
        try {
            validator.validate(load);
        } catch (InvalidLoadException e) {
            assertThat(e.code()).isEqualTo(code);
            assertThat(e.field()).isEqualTo(field);
            assertThat(e.getMessage()).startsWith(field + ": ");
            assertTheWorkerRefusesItAlike(load, e);
            return e;
        }
        throw new AssertionError("expected " + code + " on " + field);
    }

    /**
     * The worker validates as it resolves, and a load whose tensors, profile and platform are those of a load it resolved
     * before has only the rest checked (LoadResolution's layouts): the same load, refused the same way, whether or not a
     * valid load with its layout came first.
     */
    private void assertTheWorkerRefusesItAlike(ModelLoaded load, InvalidLoadException expected) {
        LoadResolution worker = new LoadResolution("test");
        ModelLoaded sameLayout = ModelLoaded.newBuilder(SampleEvents.edgeLoad("d", "r", 1)).setTensors(load.getTensors())
                .setProfile(load.getProfile()).setPlatform(load.getPlatform()).build();
        boolean layoutValid;
        try {
            worker.resolve(sameLayout, validator, new Provenance("t", 0, 0), java.time.Instant.EPOCH);
            layoutValid = true;
        } catch (InvalidLoadException e) {
            layoutValid = false;
        }
        assertThat(worker.layoutsRemembered()).isEqualTo(layoutValid ? 1 : 0);
        assertThatThrownBy(() -> worker.resolve(load, validator, new Provenance("t", 0, 1), java.time.Instant.EPOCH))
                .as("refused by the worker %s", layoutValid ? "from a known layout" : "from scratch")
                .isInstanceOfSatisfying(InvalidLoadException.class, e -> assertSameRefusal(e, expected));
        assertTheWorkerReadingBytesRefusesItAlike(load, sameLayout);
    }

    /**
     * The same through LoadLayouts, as the worker reads records: a valid layout's bytes are recognised, not decoded, and
     * the load is refused as the load its bytes hold is refused when decoded whole (what UTF-8 cannot carry, an unpaired
     * surrogate, is not in the bytes: they may hold another fault, or none).
     */
    private void assertTheWorkerReadingBytesRefusesItAlike(ModelLoaded load, ModelLoaded sameLayout) {
        EventSerde<ModelLoaded> serde = EventSerde.of(ModelLoaded.class);
        byte[] bytes;
        try {
            bytes = serde.encode(load);
        } catch (RuntimeException unencodable) {
            return; // a load Avro cannot encode (a null where the schema has none) never reaches the worker as bytes
        }
        LoadResolution worker = new LoadResolution("test");
        LoadLayouts layouts = new LoadLayouts(8);
        boolean layoutValid = refusal(() -> worker.resolve(layouts.read(serde.encode(sameLayout)), validator, new Provenance("t", 0, 0),
                java.time.Instant.EPOCH)) == null;
        LoadLayouts.Read read = layouts.read(bytes);
        assertThat(read.known()).as("the layout's bytes recognised").isEqualTo(layoutValid);
        InvalidLoadException asDecoded = refusal(() -> validator.validate(serde.decode(bytes)));
        InvalidLoadException asRead = refusal(() -> worker.resolve(read, validator, new Provenance("t", 0, 1), java.time.Instant.EPOCH));
        assertThat(asRead == null).as("refused reading bytes (%s) as decoded whole", read.known() ? "layout recognised" : "decoded")
                .isEqualTo(asDecoded == null);
        if (asDecoded != null) {
            assertSameRefusal(asRead, asDecoded);
        }
    }

    private static InvalidLoadException refusal(Runnable check) {
        try {
            check.run();
            return null;
        } catch (InvalidLoadException e) {
            return e;
        }
    }

    private static void assertSameRefusal(InvalidLoadException actual, InvalidLoadException expected) {
        assertThat(actual.code()).isEqualTo(expected.code());
        assertThat(actual.field()).isEqualTo(expected.field());
        assertThat(actual.getMessage()).isEqualTo(expected.getMessage());
    }

    private static ModelLoaded withTensors(Consumer<List<TensorInfo>> change) {
        ModelLoaded load = SampleEvents.edgeLoad("d", "r", 3);
        List<TensorInfo> tensors = new ArrayList<>(load.getTensors());
        change.accept(tensors);
        return ModelLoaded.newBuilder(load).setTensors(tensors).build();
    }

    private static ModelLoaded withTensor(int index, UnaryOperator<TensorInfo.Builder> change) {
        return withTensors(tensors -> tensors.set(index, change.apply(TensorInfo.newBuilder(tensors.get(index))).build()));
    }
}
