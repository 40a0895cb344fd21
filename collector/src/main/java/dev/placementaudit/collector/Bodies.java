package dev.placementaudit.collector;

import io.javalin.http.Context;

import java.io.EOFException;
import java.io.FilterInputStream;
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

    /** The body as a stream that fails with {@link TooLargeException} past {@code max} bytes, as sent and once inflated. */
    static InputStream open(Context ctx, long max) throws IOException {
        long declared = ctx.contentLength();
        if (declared > max) {
            throw new TooLargeException("a body of " + declared + " bytes, over collector.max.body.bytes=" + max + ": send smaller batches");
        }
        String encoding = ctx.header("Content-Encoding");
        boolean gzip = encoding != null && encoding.trim().equalsIgnoreCase("gzip");
        if (encoding != null && !gzip && !encoding.trim().equalsIgnoreCase("identity")) {
            throw new BadBodyException("Content-Encoding '" + encoding + "' is not taken: send gzip or nothing");
        }
        InputStream sent = new Bounded(ctx.bodyInputStream(), max, "a body");
        if (!gzip) {
            return sent;
        }
        try {
            return new Bounded(new GZIPInputStream(sent, 64 * 1024), max, "a gzip body that inflates to");
        } catch (ZipException | EOFException e) {
            throw new BadBodyException("the body says Content-Encoding: gzip but is not gzip: " + e.getMessage());
        }
    }

    /** Counts what is read through it and fails past its bound. */
    private static final class Bounded extends FilterInputStream {
        private final long max;
        private final String what;
        private long read;

        Bounded(InputStream in, long max, String what) {
            super(in);
            this.max = max;
            this.what = what;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) <= 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] buffer, int offset, int length) throws IOException {
            int n;
            try {
                n = super.read(buffer, offset, length);
            } catch (ZipException | EOFException e) {
                throw new BadBodyException("the body says Content-Encoding: gzip but is not gzip: " + e.getMessage());
            }
            count(Math.max(0, n));
            return n;
        }

        private void count(int n) {
            read += n;
            if (read > max) {
                throw new TooLargeException(what + " over " + max + " bytes (collector.max.body.bytes): send smaller batches");
            }
        }
    }
}
