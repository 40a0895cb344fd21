package dev.placementaudit.producer.simulate;

import dev.placementaudit.core.placement.KernelCapabilities;
import dev.placementaudit.core.placement.PlannerProfile;
import dev.placementaudit.core.placement.StorageCapabilities;
import dev.placementaudit.core.placement.WeightForm;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.model.DeploymentTarget;
import dev.placementaudit.producer.model.FormPolicy;
import dev.placementaudit.producer.model.ModelLoadedBuilder;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.model.StoredTensor;
import dev.placementaudit.producer.model.Platforms;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Random;
import java.util.UUID;

/**
 * A fleet, release after release: every deployment loads every model once per release, on its platform under its
 * profile, with the drift each release brings. Deterministic for a seed (load ids included), so a simulated
 * fleet can be replayed and diffed exactly.
 */
public final class FleetSimulator implements Iterable<ModelLoaded> {
    /** Deployment kinds the fleet mixes: a phone app, an edge box, a server JVM, a browser build. */
    private static final List<Kind> KINDS = List.of(
            new Kind("android", PlannerProfile.EDGE, "android", "all"),
            new Kind("edge", PlannerProfile.EDGE, "native", "all"),
            new Kind("server", PlannerProfile.DESKTOP, "jvm", "all"),
            new Kind("web", PlannerProfile.DESKTOP, "browser", "dense-only"));

    private final long seed;
    private final int deployments;
    private final List<String> releases;
    private final List<ModelCatalog.Archetype> models;
    private final List<Drift> drift;
    private final Instant start;
    private final Map<String, StoredModel> stored = new HashMap<>();

    public FleetSimulator(long seed, int deployments, List<String> releases, List<ModelCatalog.Archetype> models,
                          List<Drift> drift, Instant start) {
        if (deployments < 1 || releases.isEmpty() || models.isEmpty()) {
            throw new IllegalArgumentException("a fleet needs at least one deployment, release and model");
        }
        this.seed = seed;
        this.deployments = deployments;
        this.releases = List.copyOf(releases);
        this.models = List.copyOf(models);
        this.drift = List.copyOf(drift);
        this.start = start;
        this.models.forEach(m -> stored.put(m.id(), m.model()));
    }

    public int loadCount() {
        return deployments * releases.size() * models.size();
    }

    public long tensorCount() {
        return (long) deployments * releases.size() * models.stream().mapToLong(m -> stored.get(m.id()).tensors().size()).sum();
    }

    /** In release order: the whole fleet on release 1, then on release 2, and so on. */
    @Override
    public Iterator<ModelLoaded> iterator() {
        return new Iterator<>() {
            private int next;

            @Override
            public boolean hasNext() {
                return next < loadCount();
            }

            @Override
            public ModelLoaded next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                int i = next++;
                int model = i % models.size();
                int deployment = (i / models.size()) % deployments;
                int release = i / (models.size() * deployments);
                return load(release, deployment, models.get(model), i);
            }
        };
    }

    private ModelLoaded load(int release, int deployment, ModelCatalog.Archetype archetype, int sequence) {
        Kind kind = KINDS.get(deployment % KINDS.size());
        PlannerProfile profile = kind.profile();
        StorageCapabilities platform = Platforms.byName(kind.platform());
        for (Drift d : drift) {
            if (d.fromRelease() <= release) {
                if (d instanceof Drift.Unservable u) {
                    platform = u.apply(platform);
                } else if (d instanceof Drift.Threshold t) {
                    profile = t.apply(profile);
                }
            }
        }
        StoredModel model = stored.get(archetype.id());
        KernelCapabilities kernels = Platforms.kernels(kind.kernels());
        Map<String, WeightForm> base = new FormPolicy(profile, kernels).forms(model.tensors());
        Map<String, WeightForm> overrides = new HashMap<>();
        for (Drift d : drift) {
            if (d instanceof Drift.Dequantize dq && d.fromRelease() <= release) {
                for (StoredTensor tensor : model.tensors()) {
                    if (!tensor.format().isDense() && dq.matches(tensor.name())) {
                        overrides.put(tensor.name(), dq.apply(base.get(tensor.name())));
                    }
                }
            }
        }
        String deploymentId = kind.name() + "-" + String.format("%03d", deployment);
        DeploymentTarget target = new DeploymentTarget(deploymentId, "cluster-" + (deployment % 3), deploymentId + "-host",
                releases.get(release), kind.platform(), platform);
        Random random = new Random(seed * 31 + sequence);
        UUID loadId = UUID.nameUUIDFromBytes((seed + "/" + sequence).getBytes(StandardCharsets.UTF_8));
        Instant at = start.plus(Duration.ofHours(24L * release)).plusSeconds(deployment * 60L + random.nextInt(60));
        return ModelLoadedBuilder.build(loadId, at, archetype.id(), model, target, new FormPolicy(profile, kernels, false, overrides),
                Map.of("simulated", "true", "kind", kind.name()), "placement-audit-producer simulate");
    }

    private record Kind(String name, PlannerProfile profile, String platform, String kernels) {
    }

    /** The releases as the simulator names them by default: r1, r2, ... */
    public static List<String> releaseNames(int count) {
        List<String> names = new ArrayList<>();
        for (int i = 1; i <= count; i++) {
            names.add("r" + i);
        }
        return names;
    }
}
