#!/usr/bin/env bash
# Runs a benchmark runner: bench/run.sh worker [--loads N (180000)] [--runs R] [--warmup W] [--model ID] [--ahead 0,1,2] [--threads 1,2] [--overlap true,false] [--reconcile 0s,2m (0s: off)]
#                          bench/run.sh store [--mix fleet|distinct] [--loads N] [--runs R] [--query-loads 1000000] [--keep-schema true] [--observe true] [--query-layout time|deployment]   (needs PostgreSQL: PG* env; --runs 0: queries only; --query-layout: the query fill's rows in the order loads happened (default) or deployment by deployment; --query-loads also times opening a store of that many loads written at schema V16; --observe: devices report what they held)
#                          bench/run.sh store --store-heap 256m [--loads N]   (store run as its own process with that heap; its GC log read)
#                          bench/run.sh store --grow 1000000,3000000,10000000   (one store filled by SQL to each size in turn, a fleet's year in time order; at each: every query's p50/p99, size per million, 20,000 loads ingested against a raw COPY, verify since the last, prune of the oldest month)
#                          bench/run.sh collector [--loads 20000] [--rounds 3] [--warmup 1] [--seconds 10] [--senders 8] [--batch 100]   (the HTTPS collector against a direct producer; its heap at full rate)
#                          bench/run.sh loader [--rounds 7] [--model bitnet-2b-tq2_0]   (the reference loader with and without measuring; no broker)
#                          bench/run.sh llama [--rounds 7]   (real llama.cpp: its load bare against measured, ~110 MB Q4_0; producer load --runtime llama.cpp of the tiny model, JVM start included)
#                          bench/run.sh prepare [JMH options]   (the worker's CPU per record, no broker: JMH)
#                          bench/run.sh jmh [BENCHMARK] [JMH options]   (any JMH benchmark: ReaderBenchmark, the model file readers)
#                          bench/run.sh cli [--runs N] [--baseline DIST_HOME]   (the launcher's commands, timed as a user feels them, beside another distribution's if given: bench/cli-latency.sh)
#                          bench/run.sh restart [--runs N] [--under-load]   (a store killed with SIGKILL: restart to first commit; bench/restart.sh)
#                          bench/run.sh demo [--runs N]   (what the demo's llama.cpp boxes add to its time: bench/demo-time.sh)
#                          bench/run.sh soak [--minutes N] [--outage-every R]   (the chaos soak: services killed at random, every invariant checked; bench/soak.sh)
# Against KAFKA_BOOTSTRAP_SERVERS when set; otherwise starts a single-node KRaft broker in a JVM process of its own,
# so the broker's heap and GC are not shared with the JVM being measured; BENCH_CLUSTER=3 starts the three-node cluster
# the guarantees are tested on instead (replication factor 3, min.insync.replicas 2: testkit's ClusterMain). BENCH_RTT_MS=1 puts that broker one
# emulated network hop away (bench/.../LatencyProxy: every round trip 1 ms longer). BENCH_JAVA_OPTS adds JVM options to the runner
# (a profiler, say: BENCH_JAVA_OPTS=-XX:StartFlightRecording=filename=worker.jfr,settings=profile).
set -euo pipefail
cd "$(dirname "$0")/.."
runner="${1:-worker}"; shift || true
if [ "$runner" = cli ]; then
  exec bench/cli-latency.sh "$@"
fi
if [ "$runner" = restart ]; then
  exec bench/restart.sh "$@"
fi
if [ "$runner" = soak ]; then
  exec bench/soak.sh "$@"
fi
if [ "$runner" = demo ]; then
  exec bench/demo-time.sh "$@"
fi
mvn -q -B -ntp -pl bench -am package -DskipTests
cp="bench/target/classes:$(cat bench/target/classpath.txt)"
case "$runner" in
  prepare) exec java -cp "$cp" org.openjdk.jmh.Main PrepareBenchmark "$@" ;;
  jmh) exec java -cp "$cp" org.openjdk.jmh.Main "$@" ;;
  loader) exec java -Xmx1g -XX:MaxDirectMemorySize=4g ${BENCH_JAVA_OPTS:-} -cp "$cp" dev.placementaudit.bench.LoaderBench "$@" ;;
  llama) exec java -Xmx512m ${BENCH_JAVA_OPTS:-} -cp "$cp" dev.placementaudit.bench.LlamaBench "$@" ;;
  worker) main=dev.placementaudit.bench.WorkerBench ;;
  store) main=dev.placementaudit.bench.StoreBench ;;
  collector) main=dev.placementaudit.bench.CollectorBench ;;
  *) echo "unknown runner '$runner' (worker, store, collector, loader, llama, prepare, jmh, cli, restart, soak, demo)"; exit 2 ;;
esac
if [ -z "${KAFKA_BOOTSTRAP_SERVERS:-}" ] && [ "${BENCH_CLUSTER:-1}" = 3 ]; then
  dir=$(mktemp -d /tmp/pa-bench-cluster.XXXXXX)
  java -Xmx256m -cp "$cp" dev.placementaudit.testkit.ClusterMain > "$dir/cluster.log" 2>&1 &
  pids="$!"
  trap 'status=$?; kill $pids 2>/dev/null; wait $pids 2>/dev/null || true; rm -rf "$dir"; exit "$status"' EXIT
  for _ in $(seq 1 240); do grep -q "^pids " "$dir/cluster.log" && break; sleep 0.5; done
  grep -q "^pids " "$dir/cluster.log" || { cat "$dir/cluster.log"; exit 1; }
  export KAFKA_BOOTSTRAP_SERVERS="$(sed -n 's/^cluster ready at //p' "$dir/cluster.log")" PA_BENCH_REPLICATION=3
  export PA_BENCH_BROKER="a three-node cluster of separate JVM processes on this machine (replication factor 3, min.insync.replicas 2)"
  export PA_BENCH_BROKER_PID="$(sed -n 's/^pids //p' "$dir/cluster.log")" PA_BENCH_CLK_TCK="$(getconf CLK_TCK)"
elif [ -z "${KAFKA_BOOTSTRAP_SERVERS:-}" ]; then
  dir=$(mktemp -d /tmp/pa-bench-kafka.XXXXXX)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
  advertised=$port pids=""
  # BENCH_RTT_MS=1 puts a proxy adding a 1 ms round trip between every client and the broker: a network hop.
  if [ -n "${BENCH_RTT_MS:-}" ]; then
    advertised=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
    java -Xmx256m -cp "$cp" dev.placementaudit.bench.LatencyProxy "$advertised" "$port" "$BENCH_RTT_MS" > "$dir/proxy.log" 2>&1 &
    pids="$!"
    for _ in $(seq 1 40); do grep -q "proxy ready" "$dir/proxy.log" && break; sleep 0.25; done
    grep -q "proxy ready" "$dir/proxy.log" || { cat "$dir/proxy.log"; exit 1; }
  fi
  java -Xmx1g -cp "$cp" dev.placementaudit.testkit.BrokerMain "$dir" "$port" "$((port + 1))" "$advertised" > "$dir/broker.log" 2>&1 &
  pids="$! $pids"
  # Keep the runner's exit status: without saving it, the trap's own wait would replace it.
  trap 'status=$?; kill $pids 2>/dev/null; wait $pids 2>/dev/null || true; rm -rf "$dir"; exit "$status"' EXIT
  for _ in $(seq 1 120); do grep -q "broker ready" "$dir/broker.log" && break; sleep 0.5; done
  grep -q "broker ready" "$dir/broker.log" || { cat "$dir/broker.log"; exit 1; }
  export KAFKA_BOOTSTRAP_SERVERS="localhost:$advertised" PA_BENCH_BROKER="separate JVM process on this machine"
  if [ -n "${BENCH_RTT_MS:-}" ]; then
    PA_BENCH_BROKER="$PA_BENCH_BROKER, behind a proxy adding ${BENCH_RTT_MS} ms per round trip (its CPU counted with the broker's)"
  fi
  # The runner reports the broker's (and the proxy's) CPU per mode from /proc/PID/stat.
  export PA_BENCH_BROKER_PID="$pids" PA_BENCH_CLK_TCK="$(getconf CLK_TCK)"
fi
rc=0
java -Xmx2g ${BENCH_JAVA_OPTS:-} -cp "$cp" "$main" "$@" || rc=$?
exit "$rc"
