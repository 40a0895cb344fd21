package dev.placementaudit.producer.cli;

import dev.placementaudit.core.format.TensorEncodings;
import dev.placementaudit.core.placement.PlannerProfile;
import dev.placementaudit.core.placement.StorageCapabilities;
import dev.placementaudit.producer.model.DeploymentTarget;
import dev.placementaudit.producer.model.FormPolicy;
import dev.placementaudit.producer.model.Platforms;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.List;
import java.util.stream.Collectors;

/** Where and how the model loads. */
final class TargetOptions {
    @Option(names = "--deployment", required = true, description = "deployment id") String deployment;

    @Option(names = "--release", required = true, description = "release of the runtime doing the load") String release;

    @Option(names = "--cluster", defaultValue = "default", description = "cluster (default: ${DEFAULT-VALUE})") String cluster;

    @Option(names = "--host", description = "host (default: this machine's name)") String host;

    @Mixin PlanOptions plan = new PlanOptions();

    @Option(names = "--servable", split = ",", paramLabel = "ENCODING", description = "encodings a loader serves from a mapping (default: SKaiNET #1192's set)")
    List<String> servable;

    @Option(names = "--weights-mapped", paramLabel = "true|false", description = "override whether the profile asks for weights to be mapped")
    Boolean weightsMapped;

    PlannerProfile plannerProfile() {
        PlannerProfile named = plan.plannerProfile();
        return weightsMapped == null ? named : named.withWeightsMapped(weightsMapped);
    }

    StorageCapabilities capabilities() {
        StorageCapabilities caps = Platforms.byName(plan.platform);
        if (servable != null) {
            caps = caps.withMappedServableEncodings(servable.stream().map(TensorEncodings::parseKnown)
                    .collect(Collectors.toSet()));
        }
        return caps;
    }

    DeploymentTarget target() {
        String hostName = host != null ? host : System.getenv().getOrDefault("HOSTNAME", "localhost");
        return new DeploymentTarget(deployment, cluster, hostName, release, plan.platform, capabilities());
    }

    FormPolicy formPolicy() {
        return plan.formPolicy(plannerProfile());
    }
}
