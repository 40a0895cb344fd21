#!/usr/bin/env python3
"""Where the worker's CPU goes, per record, from a JFR recording of `bench/run.sh worker`.

Usage: jfr print --events jdk.ExecutionSample worker.jfr | bench/jfr-worker-profile.py

Counts the execution samples of the worker's own threads (resolver-loop-*, resolver-prepare-*, and the producer's
network thread of the worker: kafka-producer-network-thread | resolver-*) and files each under the first frame, from
the top of its stack, that is not the JDK's own (what called into the JDK pays for it). Prints two Markdown tables:
the stages, and the methods that took the most samples.
"""
import re
import sys
from collections import Counter

STAGES = [
    ("compression (lz4)", ("net.jpountz", "org.apache.kafka.common.compress")),
    ("Avro decode of ModelLoaded", ("org.apache.avro.io.BinaryDecoder", "org.apache.avro.specific.SpecificDatumReader",
                                    "org.apache.avro.generic.GenericDatumReader", "dev.placementaudit.schemas.EventSerde.decode")),
    ("digest (MD5 of the decision ids, SHA-256 of plans)", ("sun.security.provider", "java.security.MessageDigest", "dev.placementaudit.core.placement.PolicyDigest",
                          "dev.placementaudit.schemas.PlanDigest")),
    ("encoding decisions", ("dev.placementaudit.resolution.DecisionEncoder", "org.apache.avro.io.BinaryEncoder",
                            "org.apache.avro.specific.SpecificDatumWriter", "org.apache.avro.generic.GenericDatumWriter")),
    ("validation", ("dev.placementaudit.resolution.LoadValidator",)),
    ("resolution (placement-core)", ("dev.placementaudit.core.",)),
    ("resolution (the rest of LoadResolution)", ("dev.placementaudit.resolution.",)),
    ("producer: send, batching, records", ("org.apache.kafka.clients.producer", "org.apache.kafka.common.record")),
    ("consumer: fetch, poll", ("org.apache.kafka.clients.consumer",)),
    ("network I/O", ("org.apache.kafka.common.network", "sun.nio", "java.nio")),
    ("Kafka client, other", ("org.apache.kafka",)),
    ("metrics (Micrometer)", ("io.micrometer",)),
    ("worker loop", ("dev.placementaudit.worker.",)),
]

JDK = ("java.", "jdk.", "sun.")
DIGEST = ("sun.security.provider", "java.security.MessageDigest")


def stage(frames):
    """The stage of the first frame from the top that is not the JDK's own (what called into the JDK pays for it),
    except a digest, which is the JDK's but a stage of its own."""
    for frame in frames:
        if frame.startswith(DIGEST):
            return "digest (MD5 of the decision ids, SHA-256 of plans)"
        if frame.startswith(JDK):
            continue
        for name, prefixes in STAGES:
            if frame.startswith(prefixes):
                return name
        return "other"
    return "the JDK alone (GC, compiler, no caller in the sample)"


def first_own(frames):
    for frame in frames:
        if not frame.startswith(JDK):
            return frame
    return "(JDK only)"

def main():
    text = sys.stdin.read()
    counts = Counter()
    methods = Counter()
    for event in text.split("jdk.ExecutionSample")[1:]:
        thread = re.search(r'sampledThread = "([^"]*)"', event)
        if not thread or not re.match(r"(resolver-loop-|resolver-prepare-|kafka-producer-network-thread \| resolver-)", thread.group(1)):
            continue
        frames = re.findall(r"^\s+([\w.$]+)\(", event, flags=re.M)
        counts[stage(frames)] += 1
        methods[first_own(frames)] += 1
    total = sum(counts.values())
    if total == 0:
        print("no samples of the worker's threads")
        return 1
    print(f"{total} samples of the worker's threads\n")
    print("| stage | samples | share |")
    print("|---|---|---|")
    for name, n in counts.most_common():
        print(f"| {name} | {n} | {100.0 * n / total:.1f}% |")
    print("\nThe methods that took the most samples (first frame of ours or a library's, from the top):\n")
    print("| method | samples | share |")
    print("|---|---|---|")
    for name, n in methods.most_common(15):
        print(f"| `{name}` | {n} | {100.0 * n / total:.1f}% |")
    return 0

if __name__ == "__main__":
    sys.exit(main())
