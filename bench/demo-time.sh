#!/usr/bin/env bash
# What the demo's llama.cpp boxes add to its time: bench/run.sh demo [--runs N (5)]
# Runs `placement-audit demo` from the packaged distribution N times with its llama.cpp boxes and N times without
# (--without-llama-cpp), alternating, each on a fresh directory; reads the demo's own "done in X s" (broker start to
# report, the build excluded, as ./demo.sh prints it after the build) and writes the medians to bench/results/demo-<time>.md.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    *) echo "unknown option '$1' (--runs N)"; exit 2 ;;
  esac
done
mvn -q -B -ntp -pl dist -am package -Dmaven.test.skip=true
launcher=$(ls -d dist/target/placement-audit-*/bin/placement-audit | head -n 1)
work=$(mktemp -d /tmp/pa-demo-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
with=() without=()
# One unmeasured run first: the class-data archive and llama.cpp's native library are made once per machine.
"$launcher" demo --dir "$work/warm" > /dev/null
for i in $(seq 1 "$runs"); do
  for mode in with without; do
    extra=""; [ "$mode" = without ] && extra="--without-llama-cpp"
    out=$(JAVA_OPTS="-Xmx1500m -Dorg.slf4j.simpleLogger.log.dev.placementaudit=warn" "$launcher" demo --dir "$work/$mode-$i" $extra)
    seconds=$(echo "$out" | sed -n 's/^done in \([0-9.]*\) s\.$/\1/p')
    [ -n "$seconds" ] || { echo "no 'done in' line in the demo's output:"; echo "$out"; exit 1; }
    if [ "$mode" = with ]; then with+=("$seconds"); else without+=("$seconds"); fi
    echo "run $i $mode llama.cpp: $seconds s"
  done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mw=$(median "${with[@]}"); mo=$(median "${without[@]}")
report="bench/results/demo-$(date +%Y%m%d-%H%M%S).md"
cat > "$report" <<REPORT
# The demo with and without its llama.cpp boxes, $(date -u +%Y-%m-%dT%H:%M:%SZ)

\`placement-audit demo\` from the packaged distribution, $runs runs each way, alternating, a fresh directory each; the demo's
own "done in" (broker start to report; the build, which ./demo.sh runs first, excluded); $(nproc) cores. The llama.cpp boxes:
4 loads by real llama.cpp in child JVMs (2 at a time, while the simulated fleet is published), 6 loads published.

| | median | runs (s) |
|---|---|---|
| with the llama.cpp boxes | $mw s | ${with[*]} |
| without (--without-llama-cpp) | $mo s | ${without[*]} |
| what they add | $(awk "BEGIN {printf \"%.1f\", $mw - $mo}") s | goal <= 15 s |
REPORT
cat "$report"
echo "wrote $report"
