package dev.placementaudit.worker.pipeline;

import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.common.errors.IllegalGenerationException;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnknownMemberIdException;

import java.util.function.Predicate;

/** What a failure was, as the loop and its dead letters need to say it. */
final class Failures {
    private Failures() {
    }

    static boolean isGroupChange(Throwable e) {
        return anyCause(e, t -> t instanceof CommitFailedException || t instanceof RebalanceInProgressException
                || t instanceof IllegalGenerationException || t instanceof UnknownMemberIdException);
    }

    /**
     * A client-side timeout anywhere in the chain: the request may still reach the broker, or already have, so what the
     * transaction holds is no longer known to the client.
     */
    static boolean isTimeout(Throwable e) {
        return anyCause(e, t -> t instanceof TimeoutException);
    }

    private static boolean anyCause(Throwable e, Predicate<Throwable> is) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (is.test(t)) {
                return true;
            }
        }
        return false;
    }

    static String causeChain(Throwable e) {
        StringBuilder text = new StringBuilder(e.toString());
        for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
            text.append(" <- ").append(cause);
        }
        return text.toString();
    }

    /** The innermost cause, which names what the broker's absence did (a timeout, an error state). */
    static String rootCause(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root.toString();
    }

    static String rootName(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null) {
            root = root.getCause();
        }
        return root.getClass().getSimpleName();
    }
}
