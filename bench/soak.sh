#!/usr/bin/env bash
# The chaos soak for as long as asked: bench/run.sh soak [--minutes N] [--outage-every ROUNDS] [--seed S] [--clusters 'three nodes,one broker']   (needs PostgreSQL: PG* env, default 127.0.0.1:5432)
# Runs dist's ChaosSoakIT against the packaged distribution, on each cluster in turn (a three-node cluster of broker processes, one broker): one worker and two store instances, each a process,
# killed with SIGKILL at random while fleets with late loads flow in; then every invariant is checked. The figures
# (loads, kills, outages survived, recovery times) go to bench/results/soak-<time>.md; copy them to docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=10 outage_every=2 seed=20261203 clusters="three nodes,one broker"
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --outage-every) outage_every="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --clusters) clusters="$2"; shift 2 ;;
    *) echo "unknown option '$1' (--minutes N, --outage-every ROUNDS, --seed S, --clusters LIST)"; exit 2 ;;
  esac
done
report="$PWD/bench/results/soak-$(date +%Y%m%d-%H%M%S).md"
mvn -B -ntp -pl dist -am verify -Dit.test=ChaosSoakIT -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false \
    -Dpa.soak.minutes="$minutes" -Dpa.soak.outageEvery="$outage_every" -Dpa.soak.seed="$seed" -Dpa.soak.clusters="$clusters" -Dpa.soak.report="$report"
echo "wrote $report"
