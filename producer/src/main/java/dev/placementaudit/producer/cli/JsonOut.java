package dev.placementaudit.producer.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import java.io.PrintWriter;
import java.io.UncheckedIOException;

/** {@code --format json}: a command's document, indented, on standard output. */
final class JsonOut {
    private static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private JsonOut() {
    }

    static void print(PrintWriter out, Object document) {
        try {
            out.println(MAPPER.writeValueAsString(document));
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }
}
