package dev.locker.testkit;

import java.util.ArrayList;
import java.util.List;

/**
 * The resource a lock protects, as the fencing-token pattern wants it: every write carries the writer's token, and
 * a write whose token is lower than the highest one already seen is refused. A holder that paused past its expiry
 * (GC, network) and wakes up believing it still holds the lock is stopped here, whatever the lock service did.
 */
public final class FencedResource {

    private long highestToken;
    private final List<String> accepted = new ArrayList<>();

    /** Applies {@code value} if {@code token} is at least the highest seen; returns whether it was applied. */
    public synchronized boolean write(long token, String value) {
        if (token < highestToken) {
            return false;
        }
        highestToken = token;
        accepted.add(value);
        return true;
    }

    public synchronized List<String> accepted() {
        return List.copyOf(accepted);
    }
}
