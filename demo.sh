#!/usr/bin/env bash
# The one-command demo: builds what it needs, then runs the whole pipeline in one JVM with nothing installed.
#   ./demo.sh            run and print where every tensor landed, the regressions and the alerts
#   ./demo.sh --serve    the same, then keep the store's API and dashboard up on http://localhost:8082/
set -euo pipefail
cd "$(dirname "$0")"
echo "== building (first run downloads the Maven dependencies)"
mvn -q -B -ntp -pl demo -am install -DskipTests
exec java -Xmx1500m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.log.dev.placementaudit=warn \
  -cp "demo/target/classes:$(cat demo/target/classpath.txt)" dev.placementaudit.demo.PipelineDemo "$@"
