package dev.placementaudit.bench;

import com.sun.management.OperatingSystemMXBean;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * CPU seconds used so far by this JVM and, when {@code bench/run.sh} started the broker, by the broker's process (and
 * the latency proxy's, when there is one: both are the "network side" of the clients being measured).
 * On a machine whose cores the broker and the measured client share, the wall-clock ratio alone cannot say
 * whether a mode waited on the broker (latency-bound) or ran out of cores (CPU-bound); CPU per mode can.
 */
final class CpuClock {
    private final OperatingSystemMXBean os =
            (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private final List<Path> brokerStats;
    private final double ticksPerSecond;

    private CpuClock(List<Path> brokerStats, double ticksPerSecond) {
        this.brokerStats = brokerStats;
        this.ticksPerSecond = ticksPerSecond;
    }

    /**
     * Reads {@code PA_BENCH_BROKER_PID} (space-separated: the broker, and the proxy if any) and
     * {@code PA_BENCH_CLK_TCK}, which run.sh exports with the processes it starts.
     */
    static CpuClock fromEnvironment() {
        String pids = System.getenv().getOrDefault("PA_BENCH_BROKER_PID", "").trim();
        String ticks = System.getenv().getOrDefault("PA_BENCH_CLK_TCK", "100");
        List<Path> stats = pids.isEmpty() ? List.of() : Arrays.stream(pids.split("\\s+")).map(pid -> Path.of("/proc", pid, "stat")).toList();
        return new CpuClock(stats.stream().allMatch(Files::isReadable) ? stats : List.of(), Double.parseDouble(ticks));
    }

    Reading read() {
        return new Reading(os.getProcessCpuTime() / 1e9, brokerSeconds());
    }

    boolean seesBroker() {
        return !brokerStats.isEmpty();
    }

    private double brokerSeconds() {
        if (brokerStats.isEmpty()) {
            return Double.NaN;
        }
        double seconds = 0;
        for (Path stat : brokerStats) {
            seconds += seconds(stat);
        }
        return seconds;
    }

    /** utime + stime, fields 14 and 15 of /proc/PID/stat, counted after the parenthesised command name. */
    private double seconds(Path statFile) {
        try {
            String stat = Files.readString(statFile);
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) / ticksPerSecond;
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("cannot read the broker's CPU time from " + statFile, e);
        }
    }

    record Reading(double clientSeconds, double brokerSeconds) {
        Reading since(Reading start) {
            return new Reading(clientSeconds - start.clientSeconds, brokerSeconds - start.brokerSeconds);
        }
    }
}
