package dev.placementaudit.producer.simulate;

import dev.placementaudit.core.placement.KernelCapabilities;
import dev.placementaudit.core.placement.PlannerProfile;
import dev.placementaudit.core.placement.StorageCapabilities;
import dev.placementaudit.core.placement.WeightForm;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.model.DeploymentTarget;
import dev.placementaudit.producer.model.FormPolicy;
import dev.placementaudit.producer.model.ModelLoadedBuilder;
import dev.placementaudit.producer.model.Platforms;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.model.StoredTensor;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.UUID;

/**
 * A fleet, release after release: every deployment loads every model once per release, on its platform under its
 * profile, with the drift each release brings. Release {@code n} is dated {@code n} days after the start. Deterministic
 * for a seed (load ids included), so a simulated fleet can be replayed and diffed exactly.
 *
 * <p>Devices report late (a phone that was offline, a box whose queue drained after a restart): with a late share, that
 * share of each release's loads is held back and published after the next release's loads, still carrying the time it
 * happened, so the log holds loads dated before loads it already holds. The store must make the same history of them
 * however they arrive (docs/adr/0006).
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
    private final double late;
    private final String deploymentPrefix;
    private final Map<String, StoredModel> stored = new HashMap<>();

    public FleetSimulator(long seed, int deployments, List<String> releases, List<ModelCatalog.Archetype> models,
                          List<Drift> drift, Instant start) {
        this(seed, deployments, releases, models, drift, start, 0);
    }

    /** @param late the share of each release's loads, 0 to 1, published after the next release's loads */
    public FleetSimulator(long seed, int deployments, List<String> releases, List<ModelCatalog.Archetype> models,
                          List<Drift> drift, Instant start, double late) {
        this(seed, deployments, releases, models, drift, start, late, "");
    }

    /**
     * @param deploymentPrefix put before each deployment's name ({@code lab-android-000}): a fleet of its own beside
     *                         another simulated into the same store, whatever their seeds
     */
    public FleetSimulator(long seed, int deployments, List<String> releases, List<ModelCatalog.Archetype> models,
                          List<Drift> drift, Instant start, double late, String deploymentPrefix) {
        if (deployments < 1 || releases.isEmpty() || models.isEmpty()) {
            throw new IllegalArgumentException("a fleet needs at least one deployment, release and model");
        }
        if (!(late >= 0 && late <= 1)) {
            throw new IllegalArgumentException("the late share must be between 0 and 1, got " + late);
        }
        this.late = late;
        this.deploymentPrefix = deploymentPrefix;
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

    /**
     * In release order: the whole fleet on release 1, then on release 2, and so on; each release's late loads come after
     * the next release's loads (the last release's at the very end).
     */
    @Override
    public Iterator<ModelLoaded> iterator() {
        int perRelease = models.size() * deployments;
        List<Integer> order = new ArrayList<>(loadCount());
        List<Integer> heldBack = List.of();
        for (int release = 0; release < releases.size(); release++) {
            List<Integer> lateOfThis = new ArrayList<>();
            for (int j = 0; j < perRelease; j++) {
                int index = release * perRelease + j;
                (isLate(index) ? lateOfThis : order).add(index);
            }
            order.addAll(heldBack);
            heldBack = lateOfThis;
        }
        order.addAll(heldBack);
        Iterator<Integer> indices = order.iterator();
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                return indices.hasNext();
            }

            @Override
            public ModelLoaded next() {
                return load(indices.next());
            }
        };
    }

    /** Whether the load at this index in release order is reported late. */
    private boolean isLate(int index) {
        // SplittableRandom mixes its seed: consecutive seeds give unrelated draws (java.util.Random's first draws would not).
        return late > 0 && new SplittableRandom(seed * 1_000_003L + index).nextDouble() < late;
    }

    private ModelLoaded load(int index) {
        int model = index % models.size();
        int deployment = (index / models.size()) % deployments;
        int release = index / (models.size() * deployments);
        return load(release, deployment, models.get(model), index);
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
        String deploymentId = deploymentPrefix + kind.name() + "-" + String.format("%03d", deployment);
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
