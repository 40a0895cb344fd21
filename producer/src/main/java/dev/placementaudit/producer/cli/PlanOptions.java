package dev.placementaudit.producer.cli;

import dev.placementaudit.core.placement.PlannerProfile;
import dev.placementaudit.producer.model.FormPolicy;
import dev.placementaudit.producer.model.Platforms;
import picocli.CommandLine.Option;

/** What the plan of a load depends on besides the file: the planner profile, the platform and the runtime's kernels. */
final class PlanOptions {
    @Option(names = "--profile", defaultValue = "desktop",
            description = "planner profile: mobile-2gb, edge, desktop, native, or '<name> (strict)' (default: ${DEFAULT-VALUE})") String profile;

    @Option(names = "--platform", defaultValue = "jvm", description = "jvm, android, native, nomap, js, wasm, browser (default: ${DEFAULT-VALUE})")
    String platform;

    @Option(names = "--kernels", defaultValue = "all",
            description = "encodings the runtime's kernels read: all, dense-only, or a list like Q4_K,Q6_K (default: ${DEFAULT-VALUE})")
    String kernels;

    PlannerProfile plannerProfile() {
        return PlannerProfile.byName(profile);
    }

    /** The form each tensor takes under this profile and these kernels. */
    FormPolicy formPolicy(PlannerProfile plannerProfile) {
        return new FormPolicy(plannerProfile, Platforms.kernels(kernels));
    }
}
