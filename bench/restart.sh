#!/usr/bin/env bash
# How long a store killed with SIGKILL takes to commit again: from the new process's start (JVM included) to its first
# commit in PostgreSQL, with loads waiting. bench/run.sh restart [--runs N]   (needs PostgreSQL: PG* env, default 127.0.0.1:5432)
# Uses the packaged distribution; `placement-audit demo --serve` provides the broker (and keeps loads flowing in).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/demo-lib.sh
runs_option 5 "$@"
pg() { psql -h "${PGHOST:-127.0.0.1}" -p "${PGPORT:-5432}" -U "${PGUSER:-postgres}" -d "${PGDATABASE:-test}" -tAq -v ON_ERROR_STOP=1 "$@"; }
schema="bench_restart_$$"
store=""
start_demo restart
on_exit 'kill -9 $store 2>/dev/null; pg -c "DROP SCHEMA IF EXISTS $schema CASCADE" > /dev/null || true'
pg -c "CREATE SCHEMA $schema"
export PA_STORE_JDBC_URL="jdbc:postgresql://${PGHOST:-127.0.0.1}:${PGPORT:-5432}/${PGDATABASE:-test}" PA_STORE_JDBC_USER="${PGUSER:-postgres}" \
       PA_STORE_JDBC_SCHEMA="$schema" PA_STORE_GROUP_ID="bench-restart-$$" PA_STORE_INSTANCE_ID="bench-restart-1" PA_STORE_HTTP_PORT=-1 \
       JAVA_OPTS="-Xmx512m"
committed() { pg -c "SELECT COALESCE(SUM(next_offset), 0) FROM $schema.ingest_offsets" 2>/dev/null || echo 0; }
placement-audit store run > store.log 2>&1 &
store=$!
for _ in $(seq 1 600); do [ "$(committed)" -gt 0 ] && break; sleep 0.1; done
times=()
for run in $(seq 1 "$runs"); do
  sleep 2
  kill -9 "$store"; wait "$store" 2>/dev/null || true
  placement-audit producer simulate --deployments 2 --releases "b$run" --seed "$run" > /dev/null 2>&1
  before=$(committed)
  t0=$(date +%s%N)
  placement-audit store run >> store.log 2>&1 &
  store=$!
  while [ "$(committed)" -le "$before" ]; do
    sleep 0.05
    if [ $(( ($(date +%s%N) - t0) / 1000000 )) -gt 120000 ]; then echo "no commit within 120 s"; tail -20 store.log; exit 1; fi
  done
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  times+=("$ms")
  echo "run $run: first commit $ms ms after the restarted process started"
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
median=$(echo "$sorted" | awk -v n="$runs" 'NR == int((n + 1) / 2)')
report="$results/restart-$(date +%Y%m%d-%H%M%S).md"
{
  echo "# Store restart after SIGKILL, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "\`placement-audit store run\` (packaged distribution, -Xmx512m) on PostgreSQL $(pg -c 'SHOW server_version'), static membership"
  echo "(store.instance.id fixed), default session timeout (45 s). Each run: kill -9 the store, publish 4 loads, start it again;"
  echo "time from the new process's start (JVM included) to its first commit seen in ingest_offsets (polled every 50 ms)."
  echo "Broker: \`placement-audit demo --serve\` on the same $(nproc)-core machine."
  echo
  echo "| run | ms |"
  echo "|---|---|"
  i=1; for t in "${times[@]}"; do echo "| $i | $t |"; i=$((i + 1)); done
  echo
  echo "median $median ms, max $(echo "$sorted" | tail -n 1) ms"
} > "$report"
echo "median $median ms; wrote $report"
