# One image for the three services; docker-compose.yml picks the entry point per service.
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /src
COPY . .
RUN mvn -B -ntp -DskipTests -pl demo -am install \
 && mvn -B -ntp -q -pl demo dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=/app/lib \
 && cp demo/target/demo-*.jar /app/lib/

FROM eclipse-temurin:17-jre
COPY --from=build /app/lib /app/lib
WORKDIR /app
ENV JAVA_TOOL_OPTIONS="-XX:MaxRAMPercentage=75"
ENTRYPOINT ["java", "-cp", "/app/lib/*"]
