package dev.placementaudit.producer.cli;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.publish.PlacementEvents;
import dev.placementaudit.producer.simulate.Drift;
import dev.placementaudit.producer.simulate.FleetSimulator;
import dev.placementaudit.producer.simulate.ObservedRuntime;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.service.cli.CommandFailure;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;

@Command(name = "simulate", mixinStandardHelpOptions = true,
        description = "Publish a simulated fleet: every deployment loads every model on every release, with release drift.")
final class SimulateCommand implements Callable<Integer> {
    /** Loads sent but not yet acknowledged: enough to keep batches full, few enough to stop soon after a failure. */
    private static final int MAX_IN_FLIGHT = 200;

    @Option(names = "--deployments", defaultValue = "8", description = "deployments (default: ${DEFAULT-VALUE})") int deployments;

    @Option(names = "--releases", defaultValue = "r1,r2", split = ",", description = "releases, oldest first (default: ${DEFAULT-VALUE})")
    List<String> releases;

    @Option(names = "--models", defaultValue = "llama-3.2-1b-q4km,qwen2.5-0.5b-q8_0", split = ",",
            description = "models from the catalog: llama-3.2-1b-q4km, qwen2.5-0.5b-q8_0, bitnet-2b-tq2_0, smollm2-360m-f16 (default: ${DEFAULT-VALUE})")
    List<String> models;

    @Option(names = "--drift", paramLabel = "RULE", description = "release drift, repeatable: r2:dequantize=*ffn_down*, r2:unservable=Q6_K, "
            + "r2:threshold=1048576; with --observe also r3:leak=512MB (more off-heap than planned) and r3:diverge=*attn_q* (a runtime "
            + "that places those tensors otherwise)") List<String> drift = new ArrayList<>();

    @Option(names = "--observe", description = "each device also reports what it did: its own decision per tensor in the load, and a "
            + "LoadObserved of what it held, published after the load") boolean observe;

    @Option(names = "--observations-topic", defaultValue = PlacementEvents.OBSERVATIONS_TOPIC,
            description = "topic for the observations, with --observe (default: ${DEFAULT-VALUE})") String observationsTopic;

    @Option(names = "--seed", defaultValue = "42", description = "random seed; the same seed gives the same fleet, load ids included (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--deployment-prefix", paramLabel = "TEXT", defaultValue = "",
            description = "put before each deployment's name (lab- gives lab-android-000): a fleet of its own beside one already in the store")
    String deploymentPrefix;

    @Option(names = "--start", paramLabel = "INSTANT", defaultValue = "2026-11-01T00:00:00Z",
            description = "when the first release's loads happen; each later release a day after the one before (default: ${DEFAULT-VALUE})")
    String start;

    @Option(names = "--late", paramLabel = "PERCENT", defaultValue = "0",
            description = "this share of each release's loads is reported late: published after the next release's loads, dated when "
                    + "it happened (default: ${DEFAULT-VALUE})") double latePercent;

    @Mixin KafkaOptions kafka = new KafkaOptions();

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        if (deployments < 1) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--deployments must be at least 1, got " + deployments);
        }
        if (!(latePercent >= 0 && latePercent <= 100)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--late must be a percentage from 0 to 100, got " + latePercent);
        }
        Instant first;
        try {
            first = Instant.parse(start);
        } catch (DateTimeParseException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--start must be an instant such as 2026-11-01T00:00:00Z, got '"
                    + start + "'");
        }
        List<Drift> rules;
        try {
            rules = drift.stream().map(d -> Drift.parse(d, releases)).toList();
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        if (!observe && rules.stream().anyMatch(Drift::observed)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "leak and diverge drift are what a device observes: add --observe");
        }
        ObservedRuntime runtime = observe ? new ObservedRuntime(rules, releases) : null;
        FleetSimulator fleet = new FleetSimulator(seed, deployments, releases, models.stream().map(ModelCatalog::byId).toList(),
                rules, first, latePercent / 100, deploymentPrefix);
        Progress progress = new Progress(spec.commandLine().getErr(), "loads acknowledged", fleet.loadCount());
        Acknowledgements acks = new Acknowledgements(MAX_IN_FLIGHT);
        long tensors = 0;
        try (PlacementEvents events = observe ? kafka.connect(observationsTopic) : kafka.connect()) {
            for (ModelLoaded simulated : fleet) {
                if (!acks.acquireUnlessFailed()) {
                    break;
                }
                ObservedRuntime.Report report = runtime == null ? null : runtime.report(simulated);
                ModelLoaded load = report == null ? simulated : report.load();
                int size = load.getTensors().size();
                CompletableFuture<?> sent = events.publishAsync(load);
                if (report != null) {
                    // Sent right after its load (not from the load's callback: that runs on the producer's own thread, which a
                    // send may wait on). The two topics keep no order between them, and need none: the store waits for a
                    // load whose observation comes first.
                    sent = CompletableFuture.allOf(sent, events.publishObservationAsync(report.observation()));
                }
                sent.whenComplete((metadata, error) -> acks.done(load, size, error));
                tensors += size;
                progress.update(acks.acknowledged(), acks.tensors() + " tensors");
            }
            acks.awaitAll();
            progress.update(acks.acknowledged(), acks.tensors() + " tensors");
            if (acks.failure() != null) {
                throw new CommandFailure("simulation stopped: " + events.describeFailure(acks.failedLoad(), acks.failure()).getMessage()
                        + "; " + acks.acknowledged() + " of " + fleet.loadCount() + " loads were acknowledged before it", acks.failure());
            }
        }
        spec.commandLine().getOut().printf(Locale.ROOT, "simulated %d loads (%d deployments x %d releases x %d models, %d tensors) to %s%s in %.1f s%n",
                acks.acknowledged(), deployments, releases.size(), models.size(), tensors, kafka.topic,
                observe ? ", each with its observation to " + observationsTopic : "", progress.seconds());
        return 0;
    }
}
