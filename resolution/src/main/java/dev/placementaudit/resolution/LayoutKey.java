package dev.placementaudit.resolution;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.PlatformCapabilities;
import dev.placementaudit.events.ProfileSettings;
import dev.placementaudit.events.RuntimeIdentity;
import dev.placementaudit.events.TensorInfo;

import java.util.List;
import java.util.Objects;

/**
 * What makes two loads resolve alike but for their own fields: the same validator, profile, platform and tensors,
 * compared field by field (the events' own equals and hashCode walk the schema, at several times the cost); or, for
 * a key {@link #sharedBy} makes, the very same objects (what LoadLayouts hands every load of a layout it knows).
 */
final class LayoutKey {
    private final LoadValidator validator;
    private final ProfileSettings profile;
    private final PlatformCapabilities platform;
    private final List<TensorInfo> tensors;
    /** The runtime that made the load, when it plans by rules of its own; compared by value (it is small). */
    private final RuntimeIdentity runtime;
    private final int hash;
    private final boolean byIdentity;

    private LayoutKey(LoadValidator validator, ModelLoaded event, int hash, boolean byIdentity) {
        this.validator = validator;
        this.profile = event.getProfile();
        this.platform = event.getPlatform();
        this.tensors = event.getTensors();
        this.runtime = event.getRuntime();
        this.hash = hash;
        this.byIdentity = byIdentity;
    }

    static LayoutKey sharedBy(LoadValidator validator, ModelLoaded event) {
        return new LayoutKey(validator, event, System.identityHashCode(event.getTensors()), true);
    }

    static LayoutKey of(LoadValidator validator, ModelLoaded event) {
        List<TensorInfo> tensors = event.getTensors();
        int hash = Objects.hash(event.getProfile().getName(), event.getPlatform().getName(), tensors.size(), event.getRuntime());
        for (TensorInfo tensor : tensors) {
            for (int f = 0; f < FIELDS; f++) {
                hash = 31 * hash + Objects.hashCode(tensor.get(f));
            }
        }
        return new LayoutKey(validator, event, hash, false);
    }

    private static final int FIELDS = TensorInfo.getClassSchema().getFields().size();

    @Override
    public int hashCode() {
        return hash;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof LayoutKey other) || other.hash != hash || other.validator != validator || other.byIdentity != byIdentity
                || !Objects.equals(other.runtime, runtime)) {
            return false;
        }
        if (byIdentity) {
            return other.tensors == tensors && other.profile == profile && other.platform == platform;
        }
        if (other.tensors.size() != tensors.size()) {
            return false;
        }
        for (int i = 0; i < tensors.size(); i++) {
            TensorInfo a = tensors.get(i);
            TensorInfo b = other.tensors.get(i);
            for (int f = 0; f < FIELDS; f++) {
                if (!Objects.equals(a.get(f), b.get(f))) {
                    return false;
                }
            }
        }
        return profile.equals(other.profile) && platform.equals(other.platform);
    }
}
