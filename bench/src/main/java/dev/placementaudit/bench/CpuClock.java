package dev.placementaudit.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * CPU seconds used so far by this JVM and, when {@code bench/run.sh} started the broker, by the broker's process.
 * On a machine whose cores the broker and the measured client share, the wall-clock ratio alone cannot say
 * whether a mode waited on the broker (latency-bound) or ran out of cores (CPU-bound); CPU per mode can.
 */
final class CpuClock {
    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private final Path brokerStat;
    private final double ticksPerSecond;

    private CpuClock(Path brokerStat, double ticksPerSecond) {
        this.brokerStat = brokerStat;
        this.ticksPerSecond = ticksPerSecond;
    }

    /** Reads {@code PA_BENCH_BROKER_PID} and {@code PA_BENCH_CLK_TCK}, which run.sh exports with the broker it starts. */
    static CpuClock fromEnvironment() {
        String pid = System.getenv("PA_BENCH_BROKER_PID");
        String ticks = System.getenv().getOrDefault("PA_BENCH_CLK_TCK", "100");
        Path stat = pid == null ? null : Path.of("/proc", pid, "stat");
        return new CpuClock(stat != null && Files.isReadable(stat) ? stat : null, Double.parseDouble(ticks));
    }

    Reading read() {
        return new Reading(os.getProcessCpuTime() / 1e9, brokerSeconds());
    }

    boolean seesBroker() {
        return brokerStat != null;
    }

    /** utime + stime, fields 14 and 15 of /proc/PID/stat, counted after the parenthesised command name. */
    private double brokerSeconds() {
        if (brokerStat == null) {
            return Double.NaN;
        }
        try {
            String stat = Files.readString(brokerStat);
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) / ticksPerSecond;
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("cannot read the broker's CPU time from " + brokerStat, e);
        }
    }

    record Reading(double clientSeconds, double brokerSeconds) {
        Reading since(Reading start) {
            return new Reading(clientSeconds - start.clientSeconds, brokerSeconds - start.brokerSeconds);
        }
    }
}
