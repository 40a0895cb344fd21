package dev.placementaudit.store.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Headless Chromium driven over the DevTools protocol (a WebSocket, JSON messages), with no library beyond the JDK:
 * open a page, click what a user would click, type into a field, and read what the page shows.
 */
final class Browser implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final Process process;
    private final Path profile;
    private final WebSocket socket;
    private final AtomicInteger ids = new AtomicInteger();
    private final Map<Integer, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();

    private Browser(Process process, Path profile, WebSocket socket) {
        this.process = process;
        this.profile = profile;
        this.socket = socket;
    }

    static Browser open(Path chromium, String url) throws Exception {
        Path profile = Files.createTempDirectory("pa-chromium-cdp-");
        Process process = new ProcessBuilder(chromium.toString(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir=" + profile,
                "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--window-size=1400,1100", url)
                .redirectErrorStream(true).redirectOutput(profile.resolve("chromium.log").toFile()).start();
        Path portFile = profile.resolve("DevToolsActivePort");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Files.exists(portFile) || Files.readAllLines(portFile).size() < 2) {
            if (System.nanoTime() > deadline || !process.isAlive()) {
                process.destroyForcibly();
                throw new IllegalStateException("chromium did not open its DevTools port: " + Files.readString(profile.resolve("chromium.log")));
            }
            Thread.sleep(50);
        }
        int port = Integer.parseInt(Files.readAllLines(portFile).get(0).trim());
        HttpClient http = HttpClient.newHttpClient();
        String pageSocket = null;
        while (pageSocket == null) {
            JsonNode targets = JSON.readTree(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/json/list")).build(),
                    HttpResponse.BodyHandlers.ofString()).body());
            for (JsonNode target : targets) {
                if (target.get("type").asText().equals("page")) {
                    pageSocket = target.get("webSocketDebuggerUrl").asText();
                }
            }
            if (pageSocket == null) {
                Thread.sleep(50);
            }
        }
        Browser[] self = new Browser[1];
        StringBuilder partial = new StringBuilder();
        WebSocket socket = http.newWebSocketBuilder().buildAsync(URI.create(pageSocket), new WebSocket.Listener() {
            @Override
            public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
                partial.append(data);
                if (last) {
                    String message = partial.toString();
                    partial.setLength(0);
                    self[0].received(message);
                }
                ws.request(1);
                return null;
            }
        }).get(10, TimeUnit.SECONDS);
        self[0] = new Browser(process, profile, socket);
        return self[0];
    }

    private void received(String message) {
        try {
            JsonNode json = JSON.readTree(message);
            if (json.has("id")) {
                CompletableFuture<JsonNode> reply = pending.remove(json.get("id").asInt());
                if (reply != null) {
                    reply.complete(json);
                }
            }
        } catch (Exception e) {
            pending.values().forEach(f -> f.completeExceptionally(e));
        }
    }

    /** The value of a JavaScript expression in the page (awaited when it is a promise). */
    JsonNode evaluate(String expression) throws Exception {
        JsonNode result = call("Runtime.evaluate", Map.of("expression", expression, "returnByValue", true, "awaitPromise", true));
        if (result.path("result").has("exceptionDetails")) {
            throw new IllegalStateException("page script failed: " + result);
        }
        return result.path("result").path("result").path("value");
    }

    private JsonNode call(String method, Map<String, Object> params) throws Exception {
        int id = ids.incrementAndGet();
        CompletableFuture<JsonNode> reply = new CompletableFuture<>();
        pending.put(id, reply);
        socket.sendText(JSON.writeValueAsString(Map.of("id", id, "method", method, "params", params)), true).get(10, TimeUnit.SECONDS);
        JsonNode result = reply.get(30, TimeUnit.SECONDS);
        if (result.has("error")) {
            throw new IllegalStateException(method + " failed: " + result);
        }
        return result;
    }

    /** A trusted click at the element's centre, as the mouse makes it (the page cannot tell it from a user's). */
    private void mouseClick(double x, double y) throws Exception {
        for (String type : java.util.List.of("mouseMoved", "mousePressed", "mouseReleased")) {
            call("Input.dispatchMouseEvent", Map.of("type", type, "x", x, "y", y, "button", "left", "clickCount", 1));
        }
    }

    /** Waits until the page has rendered {@code view} (its script marks body data-view and data-ready). */
    void awaitView(String view) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (System.nanoTime() < deadline) {
            // The page may still be loading (no body yet, or about:blank): then it is not ready, not an error.
            JsonNode state = evaluate("({view: document.body ? document.body.dataset.view : null, "
                    + "ready: document.body ? document.body.dataset.ready : null})");
            if (view.equals(state.path("view").asText()) && "true".equals(state.path("ready").asText())) {
                return;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("the page never showed the " + view + " view; it shows: " + text());
    }

    /** Clicks the first link whose text is {@code text} (as a user would: a real click event), and returns its address. */
    String clickLink(String text) throws Exception {
        JsonNode link = evaluate("(() => { const a = [...document.querySelectorAll('a')].find(a => a.textContent.trim() === "
                + JSON.writeValueAsString(text) + "); if (!a) return null; a.scrollIntoView({block: 'center'}); const r = a.getBoundingClientRect(); "
                + "return {href: a.getAttribute('href'), x: r.left + r.width / 2, y: r.top + r.height / 2}; })()");
        if (link.isNull() || link.isMissingNode()) {
            throw new AssertionError("no link '" + text + "' on the page: " + text());
        }
        mouseClick(link.get("x").asDouble(), link.get("y").asDouble());
        return link.get("href").asText();
    }

    /** Opens the first collapsed details element whose summary contains {@code text}. */
    void expand(String text) throws Exception {
        evaluate("(() => { const d = [...document.querySelectorAll('details')].find(d => d.querySelector('summary').textContent.includes("
                + JSON.writeValueAsString(text) + ")); d.querySelector('summary').click(); return d.open; })()");
    }

    /** Types into the field with this id, firing the input events a keyboard would. */
    void type(String id, String text) throws Exception {
        evaluate("document.getElementById(" + JSON.writeValueAsString(id) + ").focus()");
        call("Input.insertText", Map.of("text", text));
    }

    /** What the page shows, as text (hidden rows left out). */
    String text() throws Exception {
        return evaluate("document.body.innerText").asText();
    }

    List<String> visibleRows(String tableClass) throws Exception {
        List<String> rows = new ArrayList<>();
        evaluate("[...document.querySelectorAll('table." + tableClass + " tbody tr')].filter(r => !r.hidden).map(r => r.innerText)")
                .forEach(r -> rows.add(r.asText()));
        return rows;
    }

    @Override
    public void close() throws Exception { // NOPMD: a process to wait for
        socket.abort();
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
    }
}
