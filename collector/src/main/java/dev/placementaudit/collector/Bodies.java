package dev.placementaudit.collector;

import io.javalin.http.Context;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;

/**
 * A request body read within a bound, inflated when it says {@code Content-Encoding: gzip}. The bound holds for what is
 * sent and for what it inflates to, so a small gzip bomb is a 413 and not an exhausted heap.
 */
final class Bodies {
    private Bodies() {
    }

    static final class TooLargeException extends RuntimeException {
        TooLargeException(String message) {
            super(message);
        }
    }

    static final class BadBodyException extends RuntimeException {
        BadBodyException(String message) {
            super(message);
        }
    }

    static byte[] read(Context ctx, long max) throws IOException {
        long declared = ctx.contentLength();
        if (declared > max) {
            throw new TooLargeException("a body of " + declared + " bytes, over collector.max.body.bytes=" + max + ": send smaller batches");
        }
        String encoding = ctx.header("Content-Encoding");
        boolean gzip = encoding != null && encoding.trim().equalsIgnoreCase("gzip");
        if (encoding != null && !gzip && !encoding.trim().equalsIgnoreCase("identity")) {
            throw new BadBodyException("Content-Encoding '" + encoding + "' is not taken: send gzip or nothing");
        }
        byte[] sent = bounded(ctx.bodyInputStream(), max, "a body");
        if (!gzip) {
            return sent;
        }
        try (InputStream inflated = new GZIPInputStream(new ByteArrayInputStream(sent))) {
            return bounded(inflated, max, "a gzip body that inflates to");
        } catch (ZipException | EOFException e) {
            throw new BadBodyException("the body says Content-Encoding: gzip but is not gzip: " + e.getMessage());
        }
    }

    private static byte[] bounded(InputStream in, long max, String what) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] chunk = new byte[64 * 1024];
        long total = 0;
        for (int n; (n = in.read(chunk)) > 0; ) {
            total += n;
            if (total > max) {
                throw new TooLargeException(what + " over " + max + " bytes (collector.max.body.bytes): send smaller batches");
            }
            out.write(chunk, 0, n);
        }
        return out.toByteArray();
    }
}
