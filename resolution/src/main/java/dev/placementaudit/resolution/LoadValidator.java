package dev.placementaudit.resolution;

import dev.placementaudit.core.format.DType;
import dev.placementaudit.core.format.Format;
import dev.placementaudit.core.format.TensorEncoding;
import dev.placementaudit.core.format.TensorEncodings;
import dev.placementaudit.core.format.UnknownEncodingException;
import dev.placementaudit.core.placement.EncodingRequest;
import dev.placementaudit.core.placement.KvCacheMode;
import dev.placementaudit.core.placement.PlacementPolicy;
import dev.placementaudit.core.placement.PlanTensor;
import dev.placementaudit.core.placement.PlannerProfile;
import dev.placementaudit.core.placement.StorageCapabilities;
import dev.placementaudit.core.placement.WeightByteOrder;
import dev.placementaudit.core.placement.WeightForm;
import dev.placementaudit.core.placement.WeightResidency;
import dev.placementaudit.core.placement.WeightShapeOrientation;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.PlatformCapabilities;
import dev.placementaudit.events.ProfileSettings;
import dev.placementaudit.events.TensorForm;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.schemas.ProjectionLimits;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;
import java.util.regex.Pattern;

import static dev.placementaudit.resolution.InvalidLoadException.Code;

/**
 * The boundary check (STYLE.md 8): everything Avro's schema cannot say about a ModelLoaded - sizes, shapes,
 * names, encodings - is checked here, once, so the resolver can trust its inputs. The first problem found is
 * reported, naming the field and its value.
 */
public final class LoadValidator {
    private static final Pattern SHA256 = Pattern.compile("[0-9a-fA-F]{64}");
    private final int maxTensorsPerLoad;

    public LoadValidator(int maxTensorsPerLoad) {
        this.maxTensorsPerLoad = maxTensorsPerLoad;
    }

    public ValidLoad validate(ModelLoaded load) {
        checkLoad(load, null);
        List<TensorInfo> tensors = load.getTensors();
        if (tensors.isEmpty()) {
            throw new InvalidLoadException(Code.EMPTY_LOAD, "tensors", "a load must have at least one tensor");
        }
        if (tensors.size() > maxTensorsPerLoad) {
            throw new InvalidLoadException(Code.TOO_MANY_TENSORS, "tensors", tensors.size()
                    + " tensors exceed worker.max.tensors.per.load=" + maxTensorsPerLoad);
        }
        PlannerProfile profile = profile(load.getProfile());
        StorageCapabilities platform = platform(load.getPlatform());
        Set<String> names = new HashSet<>();
        List<PlanTensor> planned = new ArrayList<>(tensors.size());
        for (int i = 0; i < tensors.size(); i++) {
            TensorInfo tensor = tensors.get(i);
            if (isBlank(tensor.getName())) {
                throw blank("tensors[" + i + "].name");
            }
            requireFits(tensor.getName(), "decisions.tensor_name", "tensors[" + i + "].name");
            requireFits(tensor.getDtype(), "decisions.dtype", "tensors[" + i + "].dtype");
            requireFits(tensor.getEncoding(), "decisions.stored_encoding", "tensors[" + i + "].encoding");
            if (!names.add(tensor.getName())) {
                throw new InvalidLoadException(Code.DUPLICATE_TENSOR, "tensors[" + i + "].name", "'" + tensor.getName() + "' appears more than once");
            }
            planned.add(tensor(tensor, new TensorField(i, tensor.getName())));
        }
        return new ValidLoad(load, new PlacementPolicy(profile, platform), planned);
    }

    /**
     * What {@link #validate} checks of a load whose tensors, profile and platform are, value for value, those of a load
     * this validator passed (LoadResolution's layouts, the collector's {@code LoadLayouts}): everything but them, with the
     * same errors.
     */
    public void checkAllButTheLayout(ModelLoaded load) {
        checkLoad(load, "tensors");
    }

    /** Everything of the load that is not a tensor, and the tensors' text too unless {@code skipped} is "tensors". */
    private static void checkLoad(ModelLoaded load, String skipped) {
        requireText(load.getDeployment().getId(), "deployment.id");
        requireText(load.getRelease(), "release");
        requireText(load.getModel().getId(), "model.id");
        StorableText.check(load, "", skipped);
        checkStorable(load);
        if (load.getModel().getSizeBytes() < 0) {
            throw new InvalidLoadException(Code.NEGATIVE_SIZE, "model.sizeBytes", "must be >= 0, was " + load.getModel().getSizeBytes());
        }
    }

    /** What the audit store's columns and times can hold (ProjectionLimits), checked here so it is never found out there. */
    private static void checkStorable(ModelLoaded load) {
        requireFits(load.getDeployment().getId(), "loads.deployment_id", "deployment.id");
        requireFits(load.getDeployment().getCluster(), "loads.cluster", "deployment.cluster");
        requireFits(load.getDeployment().getHost(), "loads.host", "deployment.host");
        requireFits(load.getRelease(), "loads.release_name", "release");
        requireFits(load.getModel().getId(), "loads.model_id", "model.id");
        requireFits(load.getModel().getName(), "loads.model_name", "model.name");
        requireFits(load.getPlatform().getName(), "loads.platform_name", "platform.name");
        requireFits(load.getProfile().getName(), "loads.profile_name", "profile.name");
        String sha256 = load.getModel().getSha256();
        if (sha256 != null && !SHA256.matcher(sha256).matches()) {
            throw new InvalidLoadException(Code.BAD_SHA256, "model.sha256", "must be 64 hexadecimal characters, was " + StorableText.shown(sha256));
        }
        Instant at = load.getOccurredAt();
        if (at.isBefore(ProjectionLimits.EARLIEST) || at.isAfter(ProjectionLimits.LATEST)) {
            throw new InvalidLoadException(Code.TIME_OUT_OF_RANGE, "occurredAt", "must be between " + ProjectionLimits.EARLIEST + " and "
                    + ProjectionLimits.LATEST + ", was " + at);
        }
    }

    private static void requireFits(String value, String column, String field) {
        int limit = ProjectionLimits.of(column);
        if (value != null && value.length() > limit) {
            throw new InvalidLoadException(Code.TOO_LONG, field, value.length() + " characters, at most " + limit + " (" + column + "): "
                    + StorableText.shown(value));
        }
    }

    /** The event's profile; the fields placement does not read take SKaiNET's defaults. */
    static PlannerProfile profile(ProfileSettings settings) {
        requireText(settings.getName(), "profile.name");
        try {
            return new PlannerProfile(settings.getName(), settings.getReserveBytes(), PlannerProfile.DEFAULT_PREFILL_CHUNK,
                    KvCacheMode.BF16, 1.0, settings.getOffHeapThresholdBytes(), 0.05, settings.getStrict(), settings.getWeightsMapped());
        } catch (IllegalArgumentException e) {
            throw new InvalidLoadException(Code.BAD_PROFILE, "profile", e.getMessage());
        }
    }

    static StorageCapabilities platform(PlatformCapabilities platform) {
        requireText(platform.getName(), "platform.name");
        Set<TensorEncoding> servable = new LinkedHashSet<>();
        List<String> specs = platform.getMappedServableEncodings();
        for (int i = 0; i < specs.size(); i++) {
            try {
                servable.add(TensorEncodings.parseKnown(specs.get(i)));
            } catch (UnknownEncodingException e) {
                throw new InvalidLoadException(Code.BAD_PLATFORM, "platform.mappedServableEncodings[" + i + "]", e.getMessage());
            }
        }
        return new StorageCapabilities(platform.getSupportsMappedFiles(), platform.getSupportsOffHeap(), servable);
    }

    /**
     * Names a tensor's field in an error, {@code tensors[3] 'blk.0.attn_q.weight'.storedBytes}; rendered only when
     * there is an error to report, since the worker validates every tensor of every load.
     */
    private record TensorField(int index, String name) {
        String dot(String field) {
            return "tensors[" + index + "] '" + name + "'." + field;
        }
    }

    private static PlanTensor tensor(TensorInfo tensor, TensorField field) {
        long elements = tensor.getElementCount();
        long stored = tensor.getStoredBytes();
        if (elements < 0) {
            throw new InvalidLoadException(Code.NEGATIVE_SIZE, field.dot("elementCount"), "must be >= 0, was " + elements);
        }
        if (stored < 0) {
            throw new InvalidLoadException(Code.NEGATIVE_SIZE, field.dot("storedBytes"), "must be >= 0, was " + stored);
        }
        checkShape(tensor.getShape(), elements, field);
        if (tensor.getRuntime() != null && tensor.getRuntime().getResidentBytes() < 0) {
            throw new InvalidLoadException(Code.NEGATIVE_SIZE, field.dot("runtime.residentBytes"), "must be >= 0, was "
                    + tensor.getRuntime().getResidentBytes());
        }
        DType dtype;
        try {
            dtype = DType.parse(tensor.getDtype());
        } catch (IllegalArgumentException e) {
            throw new InvalidLoadException(Code.UNKNOWN_DTYPE, field.dot("dtype"), e.getMessage());
        }
        TensorEncoding encoding;
        try {
            encoding = TensorEncodings.parse(tensor.getEncoding(), stored);
        } catch (UnknownEncodingException e) {
            throw new InvalidLoadException(Code.UNKNOWN_ENCODING, field.dot("encoding"), e.getMessage());
        }
        Format format = new Format(dtype, encoding);
        OptionalLong priced = format.physicalBytes(elements);
        if (priced.isPresent() && priced.getAsLong() != stored) {
            throw new InvalidLoadException(Code.BYTES_MISMATCH, field.dot("storedBytes"), "is " + stored + " but " + format
                    + " prices " + elements + " elements at " + priced.getAsLong());
        }
        return new PlanTensor(tensor.getName(), format, elements, stored, form(tensor.getForm(), field));
    }

    /** GGUF says a 0-dim tensor has 0 elements, safetensors says 1 (domain Q11): both are accepted. */
    private static void checkShape(List<Long> shape, long elements, TensorField field) {
        if (shape.isEmpty()) {
            if (elements > 1) {
                throw new InvalidLoadException(Code.SHAPE_MISMATCH, field.dot("elementCount"), "a scalar shape [] has 0 or 1 elements, not " + elements);
            }
            return;
        }
        long product = 1;
        for (Long dim : shape) {
            if (dim < 0) {
                throw new InvalidLoadException(Code.SHAPE_MISMATCH, field.dot("shape"), "has a negative dimension: " + shape);
            }
            try {
                product = Math.multiplyExact(product, dim);
            } catch (ArithmeticException e) {
                throw new InvalidLoadException(Code.SHAPE_MISMATCH, field.dot("shape"), shape + " overflows 64 bits");
            }
        }
        if (product != elements) {
            throw new InvalidLoadException(Code.SHAPE_MISMATCH, field.dot("elementCount"), "is " + elements + " but shape " + shape + " holds " + product);
        }
    }

    private static WeightForm form(TensorForm form, TensorField field) {
        if (form == null) {
            return WeightForm.AS_STORED_ON_HEAP;
        }
        EncodingRequest request = switch (form.getEncoding()) {
            case KEEP -> {
                if (form.getTarget() != null) {
                    throw new InvalidLoadException(Code.BAD_FORM, field.dot("form.target"), "KEEP takes no target, got '" + form.getTarget() + "'");
                }
                yield EncodingRequest.KEEP_AS_STORED;
            }
            case DEQUANTIZE_TO -> {
                try {
                    yield new EncodingRequest.DequantizeTo(DType.parse(String.valueOf(form.getTarget())));
                } catch (IllegalArgumentException e) {
                    throw new InvalidLoadException(Code.BAD_FORM, field.dot("form.target"), "DEQUANTIZE_TO needs a dtype: " + e.getMessage());
                }
            }
            case REQUANTIZE_TO -> {
                try {
                    yield new EncodingRequest.RequantizeTo(TensorEncodings.parseKnown(String.valueOf(form.getTarget())));
                } catch (IllegalArgumentException e) {
                    throw new InvalidLoadException(Code.BAD_FORM, field.dot("form.target"), "REQUANTIZE_TO needs an encoding: " + e.getMessage());
                }
            }
        };
        return new WeightForm(request, WeightByteOrder.valueOf(form.getByteOrder().name()),
                WeightShapeOrientation.valueOf(form.getShapeOrientation().name()), WeightResidency.valueOf(form.getResidency().name()));
    }

    private static void requireText(String value, String field) {
        if (isBlank(value)) {
            throw blank(field);
        }
    }

    private static InvalidLoadException blank(String field) {
        return new InvalidLoadException(Code.MISSING_FIELD, field, "must not be blank");
    }

    private static boolean isBlank(String value) {
        return value == null || value.isBlank();
    }
}
