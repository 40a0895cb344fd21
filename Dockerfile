# One image for the three services, built from the distribution; docker-compose.yml picks the command per service:
#   docker run IMAGE worker run | store run | producer simulate ... | store where ...
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /src
COPY . .
RUN mvn -B -ntp -pl dist -am package -Dmaven.test.skip=true \
 && cp -r dist/target/placement-audit-*/ /opt/placement-audit

FROM eclipse-temurin:17-jre
COPY --from=build /opt/placement-audit /opt/placement-audit
ENV JAVA_OPTS="-XX:MaxRAMPercentage=75"
ENTRYPOINT ["/opt/placement-audit/bin/placement-audit"]
