package dev.placementaudit.store.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.service.ConfigException;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.AuditStore;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.StoreHarnessAccess;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.SelfSignedKeystore;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

@ExtendWith(KafkaBrokerExtension.class)
class ApiTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();

    @DatabaseTest
    void answersWhereDiffFleetAndAlertsAndRefusesAbuse(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarnessAccess h = new StoreHarnessAccess(broker, db);
        ModelLoaded r1 = StoreHarnessAccess.load("phone-1", "r1", 3, 0, false);
        ModelLoaded r2 = StoreHarnessAccess.load("phone-1", "r2", 3, 24, true);
        ModelLoaded other = StoreHarnessAccess.load("phone-2", "r2", 3, 25, false);
        h.publish(List.of(r1, r2, other));
        Map<String, String> settings = h.settings();
        settings.put("store.http.port", "0");
        settings.put("store.api.token", "s3cret");

        try (AuditStore store = h.start(settings)) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 3);
            String base = "http://127.0.0.1:" + store.port();

            JsonNode loads = ok(base + "/api/loads?deployment=phone-1");
            assertThat(loads).hasSize(2);
            assertThat(loads.get(0).get("release").asText()).isEqualTo("r2");

            JsonNode detail = ok(base + "/api/loads/" + r2.getLoadId());
            assertThat(detail.get("tensors")).hasSize(5);
            assertThat(detail.get("tensors").get(1).get("domain").asText()).isEqualTo("HOST_OFFHEAP");
            assertThat(detail.get("tensors").get(1).get("reasonCode").asText()).isEqualTo("REENCODED_AT_LOAD");
            assertThat(detail.get("findings").asInt()).isPositive();

            JsonNode diff = ok(base + "/api/diff?deployment=phone-1&model=sample-model&from=r1&to=r2");
            assertThat(diff.get("countsByKind").get("LOST_MAPPING").asInt()).isEqualTo(3);
            assertThat(diff.get("countsByKind").get("OFFHEAP_GROWTH").asInt()).isEqualTo(1);

            JsonNode fleet = ok(base + "/api/fleet?release=r2");
            assertThat(fleet.get("deployments").asInt()).isEqualTo(2);
            assertThat(fleet.get("withRegressions")).extracting(JsonNode::asText).containsExactly("phone-1");
            assertThat(fleet.get("drifting")).as("two deployments, two placements: no majority to drift from").isEmpty();

            JsonNode history = ok(base + "/api/tensor-history?deployment=phone-1&model=sample-model&tensor=blk.1.attn_q.weight");
            assertThat(history).extracting(r -> r.get("release").asText() + " " + r.get("domain").asText())
                    .containsExactly("r1 MMAP_FILE", "r2 HOST_OFFHEAP");
            assertThat(history.get(0).get("occurredAt").asText()).as("times as ISO-8601 text").endsWith("Z");
            assertThat(ok(base + "/api/releases")).extracting(JsonNode::asText).containsExactly("r1", "r2");

            // One incident: phone-1's r1 -> r2 lost the mapping of its 3 re-encoded tensors; phone-2 is on r2 without it.
            JsonNode incidents = ok(base + "/api/incidents?open=true&release=r2");
            assertThat(incidents).hasSize(1);
            JsonNode incident = incidents.get(0);
            assertThat(incident.get("state").asText()).isEqualTo("OPEN");
            assertThat(incident.get("primaryKind").asText()).isEqualTo("LOST_MAPPING");
            assertThat(incident.get("showing").asInt()).isEqualTo(1);
            assertThat(incident.get("onRelease").asInt()).isEqualTo(2);
            assertThat(incident.get("exposure").asDouble()).isEqualTo(0.5);
            assertThat(incident.get("exposureText").asText()).isEqualTo("1 of 2 deployments (50%)");
            assertThat(ok(base + "/api/incidents?release=r1")).isEmpty();
            String id = incident.get("incidentId").asText();
            JsonNode one = ok(base + "/api/incident?id=" + id.substring(0, 10));
            assertThat(one.get("incident").get("incidentId").asText()).isEqualTo(id);
            assertThat(one.get("tensors")).extracting(JsonNode::asText).containsExactly("blk.0.attn_q.weight", "blk.1.attn_q.weight",
                    "blk.2.attn_q.weight");
            assertThat(one.get("deployments")).hasSize(1);
            assertThat(one.get("deployments").get(0).get("deploymentId").asText()).isEqualTo("phone-1");
            assertThat(one.get("deployments").get(0).get("showing").asBoolean()).isTrue();
            assertStatus(base + "/api/incident?id=inc-ffffffffffffffff", "s3cret", 404, "no incident inc-ffffffffffffffff");
            assertStatus(base + "/api/incident", "s3cret", 400, "'id' is required");
            assertStatus(base + "/api/tensor-history?deployment=phone-1&model=sample-model", "s3cret", 400, "'tensor' is required");

            JsonNode alerts = ok(base + "/api/alerts?deployment=phone-1");
            assertThat(alerts).extracting(a -> a.get("kind").asText()).containsExactlyInAnyOrder("OFFHEAP_GROWTH", "LOST_MAPPING");

            long decisionsBefore = h.count("SELECT COUNT(*) FROM load_tensors");
            assertStatus(base + "/api/loads?deployment=" + encode("x'; DROP TABLE decisions; --"), "s3cret", 400, "deployment");
            assertStatus(base + "/api/loads?limit=0", "s3cret", 400, "limit");
            assertStatus(base + "/api/loads?limit=1000000", "s3cret", 400, "limit");
            assertStatus(base + "/api/loads?limit=abc", "s3cret", 400, "limit");
            assertStatus(base + "/api/loads/not-a-uuid", "s3cret", 400, "UUID");
            assertStatus(base + "/api/loads/" + java.util.UUID.randomUUID(), "s3cret", 404, "no load");
            assertStatus(base + "/api/diff?deployment=phone-1&model=sample-model&from=r1", "s3cret", 400, "'to' is required");
            assertStatus(base + "/api/fleet?release=" + "r".repeat(500), "s3cret", 400, "release");
            assertStatus(base + "/api/fleet?release=r2", null, 401, "missing or wrong token");
            assertStatus(base + "/api/fleet?release=r2", "wrong", 401, "missing or wrong token");
            assertThat(h.count("SELECT COUNT(*) FROM load_tensors")).isEqualTo(decisionsBefore);
            assertThat(http.send(HttpRequest.newBuilder(URI.create(base + "/health")).build(), HttpResponse.BodyHandlers.ofString()).statusCode())
                    .as("ops endpoints stay open").isEqualTo(200);
        }
    }

    @DatabaseTest
    void theDashboardSignsInWithACookieNeverATokenInTheUrlAndEveryResponseIsHardened(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarnessAccess h = new StoreHarnessAccess(broker, db);
        h.publish(List.of(StoreHarnessAccess.load("phone-1", "r1", 1, 0, false)));
        Map<String, String> settings = h.settings();
        settings.put("store.http.port", "0");
        settings.put("store.api.token", "s3cret");

        try (AuditStore store = h.start(settings)) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 1);
            String base = "http://127.0.0.1:" + store.port();

            HttpResponse<String> page = get(base + "/", null);
            assertThat(page.statusCode()).isEqualTo(200);
            assertThat(page.headers().firstValue("Content-Security-Policy")).hasValueSatisfying(csp -> assertThat(csp)
                    .contains("default-src 'none'").contains("script-src 'self'").contains("frame-ancestors 'none'").doesNotContain("unsafe"));
            assertThat(page.body()).as("nothing inline for the policy to forbid").doesNotContain("<script>").doesNotContain("style=");
            assertThat(get(base + "/dashboard.js", null).headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("text/javascript"));
            for (HttpResponse<String> any : List.of(page, get(base + "/api/fleet?release=r1", null), get(base + "/health", null))) {
                assertThat(any.headers().firstValue("X-Content-Type-Options")).as(any.uri().toString()).contains("nosniff");
                assertThat(any.headers().firstValue("Access-Control-Allow-Origin")).isEmpty();
            }

            assertStatus(base + "/api/fleet?release=r1&token=s3cret", null, 400, "a token in a URL");
            assertStatus(base + "/?token=s3cret", null, 400, "a token in a URL");
            assertThat(signIn(base, "{\"token\":\"wrong\"}").statusCode()).isEqualTo(401);
            assertThat(signIn(base, "not json").statusCode()).isEqualTo(400);
            HttpResponse<String> signedIn = signIn(base, "{\"token\":\"s3cret\"}");
            assertThat(signedIn.statusCode()).isEqualTo(204);
            String cookie = signedIn.headers().firstValue("Set-Cookie").orElseThrow();
            assertThat(cookie).startsWith("pa_session=").contains("HttpOnly").contains("SameSite=Strict").doesNotContain("s3cret");
            String session = cookie.substring(0, cookie.indexOf(';'));
            HttpResponse<String> withCookie = http.send(HttpRequest.newBuilder(URI.create(base + "/api/fleet?release=r1"))
                    .header("Cookie", session).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(withCookie.statusCode()).isEqualTo(200);
            HttpResponse<String> forgedCookie = http.send(HttpRequest.newBuilder(URI.create(base + "/api/fleet?release=r1"))
                    .header("Cookie", "pa_session=s3cret").build(), HttpResponse.BodyHandlers.ofString());
            assertThat(forgedCookie.statusCode()).isEqualTo(401);
            assertThat(cookie).contains("Max-Age=" + Sessions.TTL.toSeconds());
            HttpResponse<String> signedOut = http.send(HttpRequest.newBuilder(URI.create(base + "/session")).header("Cookie", session).DELETE()
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertThat(signedOut.statusCode()).isEqualTo(204);
            HttpResponse<String> replayed = http.send(HttpRequest.newBuilder(URI.create(base + "/api/fleet?release=r1"))
                    .header("Cookie", session).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(replayed.statusCode()).as("a cookie copied before sign-out").isEqualTo(401);
            HttpResponse<String> lowerCase = http.send(HttpRequest.newBuilder(URI.create(base + "/api/fleet?release=r1"))
                    .header("Authorization", "bearer s3cret").build(), HttpResponse.BodyHandlers.ofString());
            assertThat(lowerCase.statusCode()).as("the scheme is case-insensitive").isEqualTo(200);
            HttpResponse<String> oversized = signIn(base, "{\"token\":\"" + "x".repeat(2_000_000) + "\"}");
            assertThat(oversized.statusCode()).isEqualTo(413);
            assertThat(JSON.readTree(oversized.body()).get("error").asText()).contains("over");
            assertThat(oversized.headers().firstValue("X-Content-Type-Options")).contains("nosniff");

            HttpResponse<String> unknown = get(base + "/api/nothing", "s3cret");
            assertThat(unknown.statusCode()).isEqualTo(404);
            assertThat(JSON.readTree(unknown.body()).get("error").asText()).isEqualTo("no such path: GET /api/nothing");
            HttpResponse<String> wrongMethod = http.send(HttpRequest.newBuilder(URI.create(base + "/api/loads"))
                    .header("Authorization", "Bearer s3cret").DELETE().build(), HttpResponse.BodyHandlers.ofString());
            assertThat(wrongMethod.statusCode()).isEqualTo(405);
            assertThat(JSON.readTree(wrongMethod.body()).get("error").asText()).contains("not allowed");
        }
    }

    @DatabaseTest
    void servesTheApiOverTlsFromAConfiguredKeystore(KafkaBroker broker, TestDatabase db, @TempDir Path dir) throws Exception {
        StoreHarnessAccess h = new StoreHarnessAccess(broker, db);
        h.publish(List.of(StoreHarnessAccess.load("phone-1", "r1", 1, 0, false)));
        Path keystore = SelfSignedKeystore.create(dir.resolve("store.p12"), "store-pass");
        Map<String, String> settings = h.settings();
        settings.put("store.http.port", "0");
        settings.put("store.api.token", "s3cret");
        settings.put("store.http.tls.keystore", keystore.toString());
        settings.put("store.http.tls.keystore.password", "store-pass");

        try (AuditStore store = h.start(settings)) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 1);
            HttpClient trusting = HttpClient.newBuilder().sslContext(SelfSignedKeystore.trusting(keystore, "store-pass")).build();
            HttpResponse<String> loads = trusting.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + store.port() + "/api/loads"))
                    .header("Authorization", "Bearer s3cret").build(), HttpResponse.BodyHandlers.ofString());
            HttpResponse<String> signedIn = trusting.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + store.port() + "/session"))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"token\":\"s3cret\"}")).build(), HttpResponse.BodyHandlers.ofString());

            assertThat(loads.statusCode()).as(loads.body()).isEqualTo(200);
            assertThat(JSON.readTree(loads.body())).hasSize(1);
            assertThat(signedIn.headers().firstValue("Set-Cookie")).hasValueSatisfying(c -> assertThat(c).contains("; Secure"));
        }
    }

    @Test
    void aTokenIsComparedByDigestSoNeitherItsLengthNorItsPrefixMatters() {
        ApiRoutes.TokenCheck check = new ApiRoutes.TokenCheck("s3cret");

        assertThat(check.matches("s3cret")).isTrue();
        assertThat(check.matches("s3cre")).isFalse();
        assertThat(check.matches("s3cret ")).isFalse();
        assertThat(check.matches("x".repeat(100_000))).isFalse();
        assertThat(check.matches("")).isFalse();
        assertThat(check.matches(null)).isFalse();
    }

    @Test
    void aSessionEndsWhenSignedOutOrAtItsExpiryAndIsNeverTheToken() {
        java.util.concurrent.atomic.AtomicReference<java.time.Instant> now = new java.util.concurrent.atomic.AtomicReference<>(
                java.time.Instant.parse("2026-12-03T08:00:00Z"));
        Sessions sessions = new Sessions(new java.time.Clock() {
            @Override
            public java.time.ZoneId getZone() {
                return java.time.ZoneOffset.UTC;
            }

            @Override
            public java.time.Clock withZone(java.time.ZoneId zone) {
                return this;
            }

            @Override
            public java.time.Instant instant() {
                return now.get();
            }
        });
        String first = sessions.open();
        String second = sessions.open();

        assertThat(first).hasSize(64).isNotEqualTo(second);
        assertThat(sessions.valid(first)).isTrue();
        sessions.revoke(first);
        assertThat(sessions.valid(first)).as("signed out").isFalse();
        assertThat(sessions.valid(second)).isTrue();
        now.set(now.get().plus(Sessions.TTL));
        assertThat(sessions.valid(second)).as("expired").isFalse();
        assertThat(sessions.valid(null)).isFalse();
        assertThat(sessions.valid("")).isFalse();
    }

    @Test
    void aStoreServingAnotherAddressWithoutATokenIsRefusedAndNoSecretIsInItsConfigText() {
        assertThatThrownBy(() -> StoreConfig.from(Settings.of(Map.of("store.http.host", "0.0.0.0"))))
                .isInstanceOf(ConfigException.class).hasMessageContaining("store.http.host='0.0.0.0' is not a loopback address")
                .hasMessageContaining("store.api.token").hasMessageContaining("store.api.insecure=true");
        StoreConfig secured = StoreConfig.from(Settings.of(Map.of("store.http.host", "0.0.0.0", "store.api.token", "tok-123456",
                "store.jdbc.url", "jdbc:postgresql://db/audit", "store.jdbc.password", "pw-987654")));
        assertThat(secured.toString()).doesNotContain("tok-123456").doesNotContain("pw-987654").contains("token=(set)");
        assertThat(StoreConfig.from(Settings.of(Map.of())).http().host()).isEqualTo("127.0.0.1");
    }

    private HttpResponse<String> signIn(String base, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + "/session")).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private JsonNode ok(String url) throws Exception {
        HttpResponse<String> response = get(url, "s3cret");
        assertThat(response.statusCode()).as(url + " -> " + response.body()).isEqualTo(200);
        return JSON.readTree(response.body());
    }

    private void assertStatus(String url, String token, int status, String message) throws Exception {
        HttpResponse<String> response = get(url, token);
        assertThat(response.statusCode()).as(url).isEqualTo(status);
        assertThat(JSON.readTree(response.body()).get("error").asText()).contains(message);
    }

    private HttpResponse<String> get(String url, String token) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url));
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String encode(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }
}
