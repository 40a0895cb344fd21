#!/usr/bin/env bash
# The one-command demo: builds the distribution, then runs the whole pipeline in one JVM with nothing installed.
#   ./demo.sh            run and print where every tensor landed, the regressions and the alerts
#   ./demo.sh --serve    the same, then keep the broker, the store and its dashboard up (http://localhost:8082/)
#                        and write data/demo/demo.env, which points the CLI at them: `. data/demo/demo.env`
# Any other option goes to `placement-audit demo` (see --help).
set -euo pipefail
cd "$(dirname "$0")"
echo "== building the distribution (the first run downloads the Maven dependencies)"
mvn -q -B -ntp -pl dist -am package -Dmaven.test.skip=true
launcher=$(ls -d dist/target/placement-audit-*/bin/placement-audit | head -n 1)
# The services' own start and stop lines would interleave with the report: the demo shows warnings only.
JAVA_OPTS="${JAVA_OPTS:--Xmx1500m -Dorg.slf4j.simpleLogger.log.dev.placementaudit=warn}" exec "$launcher" demo "$@"
