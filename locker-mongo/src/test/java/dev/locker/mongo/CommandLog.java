package dev.locker.mongo;

import com.mongodb.MongoServerException;
import com.mongodb.event.CommandFailedEvent;
import com.mongodb.event.CommandListener;
import com.mongodb.event.CommandStartedEvent;
import org.bson.BsonDocument;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Records the commands a driver client sends (its round trips to the server) and the server error codes it gets back.
 * Connection handshakes and the locker's clock measurement are left out: they are not per-lock operations.
 */
final class CommandLog implements CommandListener {

    private static final Set<String> SETUP = Set.of("hello", "ismaster", "saslstart", "saslcontinue", "endsessions",
            "buildinfo", "getlasterror");

    private final List<BsonDocument> sent = new CopyOnWriteArrayList<>();
    private final List<Integer> errorCodes = new CopyOnWriteArrayList<>();
    private final AtomicInteger duplicateKeys = new AtomicInteger();

    @Override
    public void commandStarted(CommandStartedEvent event) {
        if (!SETUP.contains(event.getCommandName().toLowerCase())) {
            sent.add(event.getCommand().clone());
        }
    }

    @Override
    public void commandFailed(CommandFailedEvent event) {
        if (SETUP.contains(event.getCommandName().toLowerCase())) {
            return; // e.g. "hello" unknown to mongo-java-server (59): the locker falls back to isMaster
        }
        if (event.getThrowable() instanceof MongoServerException) {
            int code = ((MongoServerException) event.getThrowable()).getCode();
            errorCodes.add(code);
            if (code == 11000) {
                duplicateKeys.incrementAndGet();
            }
        }
    }

    void clear() {
        sent.clear();
        errorCodes.clear();
    }

    /** Command names sent since the last {@link #clear()}, with their counts, sorted by name. */
    Map<String, Integer> counts() {
        Map<String, Integer> out = new TreeMap<>();
        for (BsonDocument c : sent) {
            out.merge(c.getFirstKey(), 1, Integer::sum);
        }
        return out;
    }

    List<BsonDocument> sent() {
        return List.copyOf(sent);
    }

    int duplicateKeys() {
        return duplicateKeys.get();
    }

    List<Integer> errorCodes() {
        return List.copyOf(errorCodes);
    }
}
