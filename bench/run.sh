#!/usr/bin/env bash
# Runs a benchmark runner: bench/run.sh worker [--loads N] [--runs R] [--warmup W] [--model ID]
#                          bench/run.sh store [--loads N] [--runs R] [--diff-rows 10000000]   (needs PostgreSQL: PG* env)
#                          bench/run.sh prepare [JMH options]   (the worker's CPU per record, no broker: JMH)
# Against KAFKA_BOOTSTRAP_SERVERS when set; otherwise starts a single-node KRaft broker in a JVM process of its own,
# so the broker's heap and GC are not shared with the JVM being measured. BENCH_JAVA_OPTS adds JVM options to the runner
# (a profiler, say: BENCH_JAVA_OPTS=-XX:StartFlightRecording=filename=worker.jfr,settings=profile).
set -euo pipefail
cd "$(dirname "$0")/.."
runner="${1:-worker}"; shift || true
mvn -q -B -ntp -pl bench -am package -DskipTests
cp="bench/target/classes:$(cat bench/target/classpath.txt)"
case "$runner" in
  prepare) exec java -cp "$cp" org.openjdk.jmh.Main "$@" ;;
  worker) main=dev.placementaudit.bench.WorkerBench ;;
  store) main=dev.placementaudit.bench.StoreBench ;;
  *) echo "unknown runner '$runner' (worker, store)"; exit 2 ;;
esac
if [ -z "${KAFKA_BOOTSTRAP_SERVERS:-}" ]; then
  dir=$(mktemp -d /tmp/pa-bench-kafka.XXXXXX)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
  java -Xmx1g -cp "$cp" dev.placementaudit.testkit.BrokerMain "$dir" "$port" "$((port + 1))" > "$dir/broker.log" 2>&1 &
  broker=$!
  # Keep the runner's exit status: without saving it, the trap's own wait would replace it.
  trap 'status=$?; kill "$broker" 2>/dev/null; wait "$broker" 2>/dev/null || true; rm -rf "$dir"; exit "$status"' EXIT
  for _ in $(seq 1 120); do grep -q "broker ready" "$dir/broker.log" && break; sleep 0.5; done
  grep -q "broker ready" "$dir/broker.log" || { cat "$dir/broker.log"; exit 1; }
  export KAFKA_BOOTSTRAP_SERVERS="localhost:$port" PA_BENCH_BROKER="separate JVM process on this machine"
  # The runner reports the broker's CPU per mode from /proc/$broker/stat.
  export PA_BENCH_BROKER_PID="$broker" PA_BENCH_CLK_TCK="$(getconf CLK_TCK)"
fi
rc=0
java -Xmx2g ${BENCH_JAVA_OPTS:-} -cp "$cp" "$main" "$@" || rc=$?
exit "$rc"
