#!/usr/bin/env bash
# Runs a benchmark runner: bench/run.sh worker [--loads N] [--runs R]
# Uses KAFKA_BOOTSTRAP_SERVERS when set, else starts a single-node KRaft broker in the JVM.
set -euo pipefail
cd "$(dirname "$0")/.."
runner="${1:-worker}"; shift || true
mvn -q -B -ntp -pl bench -am package -DskipTests
cp="bench/target/classes:$(cat bench/target/classpath.txt)"
case "$runner" in
  worker) main=dev.placementaudit.bench.WorkerBench ;;
  *) echo "unknown runner '$runner' (worker)"; exit 2 ;;
esac
exec java -Xmx2g -cp "$cp" "$main" "$@"
