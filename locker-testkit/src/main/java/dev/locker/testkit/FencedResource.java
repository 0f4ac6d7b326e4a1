package dev.locker.testkit;

import java.util.ArrayList;
import java.util.List;

/**
 * The resource a lock protects, as the fencing-token pattern wants it: every write carries the writer's token, and
 * a write is applied only if its token is strictly greater than the last accepted one from another writer (the same
 * writer may write again with its own token). A holder that paused past its expiry (GC, network) and wakes up
 * believing it still holds the lock is stopped here, whatever the lock service did. Two writers presenting the same
 * token mean the lock service issued one token twice: that is recorded as a violation, never applied.
 */
public final class FencedResource {

    private long highestToken;
    private String lastWriter;
    private final List<String> accepted = new ArrayList<>();
    private final List<String> violations = new ArrayList<>();

    /** Applies {@code value} for {@code writer} if {@code token} is allowed (see the class comment). */
    public synchronized boolean write(String writer, long token, String value) {
        if (token < highestToken) {
            return false;
        }
        if (token == highestToken && lastWriter != null && !lastWriter.equals(writer)) {
            violations.add("token " + token + " presented by " + writer + " after " + lastWriter + " had it");
            return false;
        }
        highestToken = token;
        lastWriter = writer;
        accepted.add(value);
        return true;
    }

    public synchronized List<String> accepted() {
        return List.copyOf(accepted);
    }

    /** Tokens issued twice, as seen here; a correct lock service leaves this empty. */
    public synchronized List<String> violations() {
        return List.copyOf(violations);
    }
}
