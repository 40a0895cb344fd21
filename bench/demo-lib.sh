# Shared by the runners that time the packaged distribution (cli-latency.sh, restart.sh); sourced, not run.
#   runs_option DEFAULT "$@"   sets $runs from --runs N
#   start_demo NAME            builds the distribution, starts `placement-audit demo --serve` in a new temporary folder
#                              ($work, made the current one), sources its demo.env; $home, $results and $demo are set
#   on_exit 'COMMANDS'         runs COMMANDS, then stops the demo and removes $work, when the runner exits
#   settle_demo                waits (at most 90 s) until the demo uses under a tenth of a core, so that what is timed is
#                              the command, not the demo still warming up beside it (its first minute takes half a core)

runs_option() {
  runs="$1"; shift
  while [ $# -gt 0 ]; do
    case "$1" in
      --runs) runs="$2"; shift 2 ;;
      *) echo "unknown option $1 (--runs N)"; exit 2 ;;
    esac
  done
}

start_demo() {
  mvn -q -B -ntp -pl dist -am package -Dmaven.test.skip=true
  home=$(cd "$(ls -d dist/target/placement-audit-*/ | head -n 1)" && pwd)
  results="$PWD/bench/results"
  work=$(mktemp -d "/tmp/pa-bench-$1.XXXXXX")
  cd "$work"
  "$home/bin/placement-audit" demo --serve --kafka-port 0 --http-port 0 > demo.log 2>&1 &
  demo=$!
  on_exit ":"
  for _ in $(seq 1 360); do grep -q "point the CLI at this demo" demo.log && break; sleep 0.5; done
  grep -q "point the CLI at this demo" demo.log || { cat demo.log; exit 1; }
  . data/demo/demo.env
}

on_exit() {
  trap "$1; kill \$demo 2>/dev/null; wait 2>/dev/null || true; cd /; rm -rf \"\$work\"" EXIT
}

settle_demo() {
  local hz before after
  hz=$(getconf CLK_TCK)
  for _ in $(seq 1 45); do
    before=$(awk '{print $14 + $15}' "/proc/$demo/stat")
    sleep 2
    after=$(awk '{print $14 + $15}' "/proc/$demo/stat")
    if [ $((after - before)) -lt $((hz / 5)) ]; then
      return 0
    fi
  done
  echo "the demo still used a tenth of a core or more after 90 s; timing anyway"
}
