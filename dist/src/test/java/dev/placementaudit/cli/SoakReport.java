package dev.placementaudit.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * What a chaos soak did and what it found, as {@code bench/run.sh soak} writes it: one row per kind of kill (broker kills
 * grouped by what they took away), one per invariant counted, then the outages and the recoveries.
 */
final class SoakReport {
    private final Map<String, Integer> serviceKills = new TreeMap<>();
    private final Map<String, List<String>> brokerKills = new LinkedHashMap<>();
    private final Map<String, Integer> counted = new LinkedHashMap<>();
    private final List<Long> outages = new ArrayList<>();
    private final List<Long> recoveries = new ArrayList<>();
    private final List<String> aborted = new ArrayList<>();

    synchronized void serviceKilled(String service) {
        serviceKills.merge(service, 1, Integer::sum);
    }

    /** A broker kill as {@code BrokerChaos.kill()} described it: its kind, a colon, the nodes. */
    synchronized void brokerKilled(String description, long downMillis) {
        int colon = description.indexOf(':');
        String kind = colon < 0 ? description : description.substring(0, colon);
        brokerKills.computeIfAbsent(kind, k -> new ArrayList<>()).add(colon < 0 ? "" : description.substring(colon + 1).trim());
        outages.add(downMillis);
    }

    synchronized void recovered(long millis) {
        recoveries.add(millis);
    }

    /** A transaction the worker reported left hanging, aborted by the runbook as the operator on call would. */
    synchronized void abortedByRunbook(List<String> partitions) {
        aborted.addAll(partitions);
    }

    synchronized void count(String what, long n) {
        counted.put(what, (int) n);
    }

    synchronized void increment(String what) {
        counted.merge(what, 1, Integer::sum);
    }

    int outages() {
        return outages.size();
    }

    synchronized String render(String cluster, double minutes, long totalSeconds, int rounds, long loads, int deployments, int stores,
                               long catchUpMillis) {
        List<Long> sorted = recoveries.stream().sorted().toList();
        StringBuilder text = new StringBuilder(String.format(Locale.ROOT, """
                # Chaos soak on %s, %s

                %.1f minutes of chaos (%d s in all): %d rounds of fleet, %d loads (%d deployments x 3 releases x 2 models a round, 25%% of each
                release reported late, each round dated a week before the last), one worker and %d store instances of one projection on
                PostgreSQL, each a process of the packaged distribution, and broker processes (replication factor %d); %d cores.

                | what | figure |
                |---|---|
                | loads, all complete once, chain verified, rebuild equal | %d |
                """, cluster, Instant.now(), minutes, totalSeconds, rounds, loads, deployments, stores, cluster.equals("three nodes") ? 3 : 1,
                Runtime.getRuntime().availableProcessors(), loads));
        brokerKills.forEach((kind, nodes) -> text.append(String.format(Locale.ROOT, "| kill -9 of %s | %d |%n", kind, nodes.size())));
        serviceKills.forEach((service, n) -> text.append(String.format(Locale.ROOT, "| kill -9 of the %s | %d |%n", service, n)));
        counted.forEach((what, n) -> text.append(String.format(Locale.ROOT, "| %s | %d |%n", what, n)));
        text.append(String.format(Locale.ROOT, "| transactions left hanging, aborted by the runbook (docs/operations.md) | %d%s |%n", aborted.size(),
                aborted.isEmpty() ? "" : ": " + String.join(", ", aborted)));
        text.append(String.format(Locale.ROOT, "| broker outages survived (no service restarted by hand) | %d, down %s ms |%n", outages.size(),
                outages.stream().map(String::valueOf).collect(Collectors.joining(", "))));
        text.append(String.format(Locale.ROOT, "| broker restart to every service healthy | median %s ms, longest %s ms |%n",
                sorted.isEmpty() ? "-" : sorted.get(sorted.size() / 2), sorted.isEmpty() ? "-" : sorted.get(sorted.size() - 1)));
        text.append(String.format(Locale.ROOT, "| chaos end to every load complete | %d ms |%n", catchUpMillis));
        return text.toString();
    }

    /** Appends {@code text} to {@code file} (both clusters' runs go in one report). */
    static void append(String file, String text) throws IOException {
        Files.createDirectories(Path.of(file).toAbsolutePath().getParent());
        Files.writeString(Path.of(file), text + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }
}
