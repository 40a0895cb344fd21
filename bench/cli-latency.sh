#!/usr/bin/env bash
# The commands a user types, timed as the user feels them: wall time of bin/placement-audit from the packaged
# distribution (JVM start included), against a running `placement-audit demo --serve`. Median and max of N runs
# each; writes bench/results/cli-<date>.md.   bench/run.sh cli [--runs N] [--baseline DIST_HOME]
# --baseline: another unpacked distribution (an earlier commit's, say), each of its runs right after this one's, so
# that a shared machine whose speed moves within the hour moves both alike: its median and the ratio get a column.
# --baseline-java JAVA: the same, with this distribution run on another JVM (PA_JAVA=JAVA; a JDK 25's, whose launcher
# path is an AOT cache, JEP 483), and the floor row that JVM's `-version`.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/demo-lib.sh
baseline=""
baseline_java=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --baseline) baseline=$(cd "$2" && pwd); shift 2 ;;
    --baseline-java) baseline_java="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ -n "$baseline" ] && [ ! -x "$baseline/bin/placement-audit" ]; then
  echo "--baseline $baseline: no bin/placement-audit there (give an unpacked distribution's home)"; exit 2
fi
runs_option 7 "${args[@]+"${args[@]}"}"
if [ -n "$baseline_java" ] && ! "$baseline_java" -version > /dev/null 2>&1; then
  echo "--baseline-java $baseline_java: does not run"; exit 2
fi
start_demo cli
[ -n "$baseline_java" ] && baseline="$home"
nobody=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
placement-audit producer sample-model --layout llama-3.2-1b-q4km --out sample.gguf > /dev/null
settle_demo

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
report="$results/cli-$(date +%Y%m%d-%H%M%S).md"
{
  echo "# CLI latency, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "bin/placement-audit from the packaged distribution, against \`placement-audit demo --serve\` (in-JVM broker, H2 store"
  echo "read through AUTO_SERVER) on this machine ($(nproc) cores). Wall time of the whole command, JVM start included;"
  echo "$runs runs each after one discarded run, once the demo has settled (under a tenth of a core). Java: $(java -version 2>&1 | head -n 1)."
  echo
  echo "Each archive of class-data sharing (one per command family) is made by the discarded first run, as a user's first"
  echo "command makes it. The floor: \`java -version\` in this run, and each command's median as a multiple of it."
  echo
  if [ -n "$baseline_java" ]; then
    echo "Baseline: this distribution on $("$baseline_java" -version 2>&1 | head -n 1) ($baseline_java), each of its runs right"
    echo "after the default JVM's; its floor is its own \`-version\`."
    echo
    echo "| command | expected exit | median ms | max ms | x java -version | baseline median ms | x baseline |"
    echo "|---|---|---|---|---|---|---|"
  elif [ -n "$baseline" ]; then
    echo "Baseline: $baseline, each of its runs right after this distribution's."
    echo
    echo "| command | expected exit | median ms | max ms | x java -version | baseline median ms | x baseline |"
    echo "|---|---|---|---|---|---|---|"
  else
    echo "| command | expected exit | median ms | max ms | x java -version |"
    echo "|---|---|---|---|---|"
  fi
} > "$report"
export PA_CDS_DIR="$work/cds"

# On JDK 25 the first run's cache is made in the background once it has exited: timed runs start when it is there.
cache_made() {
  for _ in $(seq 1 200); do
    ls "$PA_CDS_DIR" 2>/dev/null | grep -q partial || return 0
    sleep 0.1
  done
}

median_of() {
  printf '%s\n' "$@" | sort -n | awk -v n="$#" 'NR == int((n + 1) / 2)'
}

measure() {
  local label="$1" expect="$2"; shift 2
  local base=()
  if [ -n "$baseline_java" ] && [ "$1" = java ]; then
    base=("$baseline_java" "${@:2}")
  elif [ -n "$baseline_java" ]; then
    base=(env "PA_JAVA=$baseline_java" "$home/bin/placement-audit" "${@:2}")
  elif [ -n "$baseline" ] && [ "$1" = placement-audit ]; then
    base=("$baseline/bin/placement-audit" "${@:2}")
  fi
  if [ ${#base[@]} -gt 0 ]; then
    "${base[@]}" > /dev/null 2>&1 || true
    cache_made
  fi
  "$@" > /dev/null 2>&1 || true
  cache_made
  local times=() base_times=()
  for _ in $(seq 1 "$runs"); do
    local t0; t0=$(date +%s%N)
    set +e; "$@" > /dev/null 2>&1; local code=$?; set -e
    times+=("$(ms "$t0")")
    if [ "$code" != "$expect" ]; then echo "$label exited $code, expected $expect"; exit 1; fi
    if [ ${#base[@]} -gt 0 ]; then
      t0=$(date +%s%N)
      set +e; "${base[@]}" > /dev/null 2>&1; set -e
      base_times+=("$(ms "$t0")")
    fi
  done
  local median; median=$(median_of "${times[@]}")
  local max; max=$(printf '%s\n' "${times[@]}" | sort -n | tail -n 1)
  local ratio; ratio=$(awk -v m="$median" -v f="${floor:-$median}" 'BEGIN { printf "%.1f", m / f }')
  local against="" vs="" columns=""
  if [ ${#base_times[@]} -gt 0 ]; then
    against=$(median_of "${base_times[@]}")
    vs=$(awk -v m="$median" -v b="$against" 'BEGIN { printf "%.2f", m / b }')
  fi
  [ -n "$baseline" ] && columns=" $against | $vs |"
  echo "| \`$label\` | $expect | $median | $max | $ratio |$columns" >> "$report"
  echo "$label: median $median ms, max $max ms (${ratio}x java -version)${against:+; baseline $against ms (x$vs)}"
  last_median=$median
}

measure "java -version (the floor)" 0 java -version
floor=$last_median

measure "placement-audit --version" 0 placement-audit --version
measure "producer explain --model sample.gguf (146 tensors)" 0 placement-audit producer explain --model sample.gguf
measure "store where --deployment android-000" 0 placement-audit store where --deployment android-000
measure "store diff --deployment android-000 ... --from r1 --to r2" 0 placement-audit store diff --deployment android-000 --model llama-3.2-1b-q4km --from r1 --to r2
measure "store fleet --release r2" 0 placement-audit store fleet --release r2
measure "store alerts --format json" 0 placement-audit store alerts --format json
measure "store verify --full (every chain, against the published heads)" 0 placement-audit store verify --full
measure "store verify (since the last verify's marks; a baseline before them reads every chain)" 0 placement-audit store verify
measure "store verify --no-log (database only)" 0 placement-audit store verify --no-log
measure "store whatif --servable Dense(4B),Q4_K --threshold 1048576 (the README's)" 0 placement-audit store whatif --servable 'Dense(4B),Q4_K' --threshold 1048576
measure "producer simulate --deployments 1 --releases r1 (2 loads)" 0 placement-audit producer simulate --deployments 1 --releases r1
measure "store where --store <H2 file that does not exist>" 2 placement-audit store where --store ./nothing-here
measure "store where --store jdbc:postgresql://127.0.0.1:<closed port>/x (refused)" 2 placement-audit store where --store "jdbc:postgresql://127.0.0.1:$nobody/x"
PA_CONNECT_TIMEOUT=2s measure "producer simulate --bootstrap-servers 127.0.0.1:<closed port>, PA_CONNECT_TIMEOUT=2s" 2 placement-audit producer simulate --bootstrap-servers "127.0.0.1:$nobody"
measure "producer simulate --bootstrap-servers 127.0.0.1:<closed port> (default 10 s bound)" 2 placement-audit producer simulate --bootstrap-servers "127.0.0.1:$nobody"
echo "wrote $report"
