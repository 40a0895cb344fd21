#!/usr/bin/env bash
# How long a store killed with SIGKILL takes to commit again: from the new process's start (JVM included) to its first
# commit in PostgreSQL, with loads waiting. bench/run.sh restart [--runs N] [--under-load]   (needs PostgreSQL: PG* env,
# default 127.0.0.1:5432). Uses the packaged distribution; `placement-audit demo --serve` provides the broker (and its own
# worker and store keep loads flowing in).
#   --under-load: as an SRE saw it, 3 store instances of one projection share the partitions while a producer keeps
#   publishing and the worker is busy; one of them is killed and restarted, and its own log says when it committed
#   first and where the time went (JVM start, broker, database, partitions assigned).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/demo-lib.sh
under_load=false
args=()
for arg in "$@"; do
  if [ "$arg" = --under-load ]; then under_load=true; else args+=("$arg"); fi
done
runs_option 5 "${args[@]+"${args[@]}"}"
pg() { psql -h "${PGHOST:-127.0.0.1}" -p "${PGPORT:-5432}" -U "${PGUSER:-postgres}" -d "${PGDATABASE:-test}" -tAq -v ON_ERROR_STOP=1 "$@"; }
schema="bench_restart_$$"
stores=() feeder=""
start_demo restart
on_exit 'kill -9 ${stores[*]-} $feeder 2>/dev/null; pg -c "DROP SCHEMA IF EXISTS $schema CASCADE" > /dev/null || true'
pg -c "CREATE SCHEMA $schema"
export PA_STORE_JDBC_URL="jdbc:postgresql://${PGHOST:-127.0.0.1}:${PGPORT:-5432}/${PGDATABASE:-test}" PA_STORE_JDBC_USER="${PGUSER:-postgres}" \
       PA_STORE_JDBC_SCHEMA="$schema" PA_STORE_GROUP_ID="bench-restart-$$" PA_STORE_HTTP_PORT=-1 JAVA_OPTS="-Xmx512m"
committed() { pg -c "SELECT COALESCE(SUM(next_offset), 0) FROM $schema.ingest_offsets" 2>/dev/null || echo 0; }
start_store() { PA_STORE_INSTANCE_ID="bench-restart-$1" placement-audit store run > "store-$1.log" 2>&1 & stores[$1]=$!; }

if $under_load; then
  for i in 1 2 3; do start_store "$i"; done
  for _ in $(seq 1 600); do [ "$(committed)" -gt 0 ] && break; sleep 0.1; done
  # The producer keeps the worker and every store busy: a fleet every few seconds, for as long as the runs last.
  ( round=0; while true; do round=$((round + 1)); placement-audit producer simulate --deployments 16 --releases "u${round}a,u${round}b" \
      --seed "$round" > /dev/null 2>&1 || true; done ) &
  feeder=$!
  sleep 10
  times=() assigned=() started=()
  for run in $(seq 1 "$runs"); do
    sleep 3
    kill -9 "${stores[1]}"; wait "${stores[1]}" 2>/dev/null || true
    start_store 1
    for _ in $(seq 1 1200); do grep -q "first batch committed" store-1.log && break; sleep 0.1; done
    line=$(grep "first batch committed" store-1.log) || { echo "no commit within 120 s"; tail -20 store-1.log; exit 1; }
    ms=$(echo "$line" | sed -E 's/.*committed ([0-9]+) ms.*/\1/')
    at=$(echo "$line" | sed -E 's/.*assigned at (-?[0-9]+) ms.*/\1/')
    up=$(grep -E "started [0-9]+ ms after the JVM" store-1.log | sed -E 's/.*started ([0-9]+) ms.*reached at ([0-9]+) ms, broker answered at ([0-9]+) ms, database open at ([0-9]+) ms/\2 \3 \4 \1/')
    times+=("$ms") assigned+=("$at") started+=("$up")
    echo "run $run: first commit $ms ms after the JVM started (partitions assigned at $at ms; code, broker, database, started at: $up ms)"
  done
else
  start_store 1
  for _ in $(seq 1 600); do [ "$(committed)" -gt 0 ] && break; sleep 0.1; done
  times=()
  for run in $(seq 1 "$runs"); do
    sleep 2
    kill -9 "${stores[1]}"; wait "${stores[1]}" 2>/dev/null || true
    placement-audit producer simulate --deployments 2 --releases "b$run" --seed "$run" > /dev/null 2>&1
    before=$(committed)
    t0=$(date +%s%N)
    start_store 1
    while [ "$(committed)" -le "$before" ]; do
      sleep 0.05
      if [ $(( ($(date +%s%N) - t0) / 1000000 )) -gt 120000 ]; then echo "no commit within 120 s"; tail -20 store-1.log; exit 1; fi
    done
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    times+=("$ms")
    echo "run $run: first commit $ms ms after the restarted process started"
  done
fi
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
median=$(echo "$sorted" | awk -v n="$runs" 'NR == int((n + 1) / 2)')
report="$results/restart-$($under_load && echo under-load- || true)$(date +%Y%m%d-%H%M%S).md"
{
  echo "# Store restart after SIGKILL$($under_load && echo ', under load' || true), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  if $under_load; then
    echo "Three \`placement-audit store run\` instances of one projection (packaged distribution, -Xmx512m, static membership) on"
    echo "PostgreSQL $(pg -c 'SHOW server_version'), while \`producer simulate\` publishes 32 loads after 32 loads and the demo's worker and"
    echo "store resolve and ingest them, all on the same $(nproc)-core machine. Each run kills instance 1 with SIGKILL and starts it"
    echo "again; the times are the restarted process's own (JVM uptime when each step finished)."
    echo
    echo "| run | store code reached | broker answered | database open | started | partitions assigned | first commit |"
    echo "|---|---|---|---|---|---|---|"
    i=0; for t in "${times[@]}"; do read -r code broker database up <<< "${started[$i]}"
      echo "| $((i + 1)) | $code | $broker | $database | $up | ${assigned[$i]} | $t |"; i=$((i + 1)); done
  else
    echo "\`placement-audit store run\` (packaged distribution, -Xmx512m) on PostgreSQL $(pg -c 'SHOW server_version'), static membership"
    echo "(store.instance.id fixed), default session timeout (45 s). Each run: kill -9 the store, publish 4 loads, start it again;"
    echo "time from the new process's start (JVM included) to its first commit seen in ingest_offsets (polled every 50 ms)."
    echo "Broker: \`placement-audit demo --serve\` on the same $(nproc)-core machine."
    echo
    echo "| run | ms |"
    echo "|---|---|"
    i=1; for t in "${times[@]}"; do echo "| $i | $t |"; i=$((i + 1)); done
  fi
  echo
  echo "median $median ms, max $(echo "$sorted" | tail -n 1) ms"
} > "$report"
echo "median $median ms; wrote $report"
