package dev.locker.springboot;

import dev.locker.api.LockInfo;
import dev.locker.api.LockNames;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.Locker;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.lang.Nullable;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The actuator endpoint {@code locks}: one page of the locks held on the backend (by any process), with holder,
 * fencing token and expiry, through {@link Locker#list(String, int, String)}. Read-only: it never releases anything.
 * Parameters: {@code prefix} (key prefix, default every lock), {@code limit} (1..1000, default 100), {@code cursor}
 * (the previous page's {@code nextCursor}). A bad parameter is refused with {@link InvalidEndpointRequestException}
 * before any I/O; over HTTP that is a 400 whose body says what was wrong ({@link LockerEndpointWebExtension}).
 */
@Endpoint(id = "locks")
public class LockerEndpoint {

    private final Locker locker;

    /**
     * An endpoint listing {@code locker}'s backend.
     *
     * @param locker the locker to list through
     */
    public LockerEndpoint(Locker locker) {
        this.locker = locker;
    }

    /**
     * One page of held locks.
     *
     * @param prefix key prefix, written as the {@code locker} command writes keys ({@link LockNames}: text, and
     *               {@code %XX} for any byte), or null for every lock
     * @param limit  page size, a whole number from 1 to {@value Locker#MAX_LIST_LIMIT}, or null for 100
     * @param cursor the previous page's {@code nextCursor}, or null for the first page
     * @throws InvalidEndpointRequestException for a bad prefix, limit or cursor, naming the parameter
     * @return {@code locks} (each with key and column in {@link LockNames}' notation, which names the lock exactly and
     *     can be pasted into {@code locker show} or {@code locker release}; holder, fencingToken, expiresAt) and
     *     {@code nextCursor} (null at the end)
     */
    @ReadOperation
    public Map<String, Object> locks(@Nullable String prefix, @Nullable String limit, @Nullable String cursor) {
        LockPage page;
        try {
            byte[] keyPrefix = prefix == null ? new byte[0] : LockNames.parse(prefix, "prefix");
            page = locker.list(keyPrefix, limit(limit), cursor);
        } catch (IllegalArgumentException e) {
            // the locker refuses bad arguments before any I/O, so this is always the caller's mistake
            throw new InvalidEndpointRequestException(e.getMessage(), e.getMessage());
        }
        List<Map<String, Object>> locks = new ArrayList<>();
        for (LockInfo info : page.locks()) {
            Map<String, Object> lock = new LinkedHashMap<>();
            lock.put("key", LockNames.format(info.lock().key()));
            lock.put("column", LockNames.format(info.lock().column()));
            lock.put("holder", holder(info.holder()));
            lock.put("fencingToken", info.fencingToken());
            lock.put("expiresAt", info.expiresAt() == null ? null : info.expiresAt().toString());
            locks.add(lock);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("locks", locks);
        out.put("nextCursor", page.nextCursor().orElse(null));
        return out;
    }

    /** The page size asked for; read here so that "abc" gets the same clear message as 0. */
    private static int limit(@Nullable String limit) {
        if (limit == null || limit.isBlank()) {
            return 100;
        }
        try {
            int n = Integer.parseInt(limit.strip());
            if (n >= 1 && n <= Locker.MAX_LIST_LIMIT) {
                return n;
            }
        } catch (NumberFormatException e) {
            // falls through to the message below, which says what a good value is
        }
        String shown = limit.length() > 20 ? limit.substring(0, 20) + "..." : limit;
        throw new IllegalArgumentException("limit must be a whole number from 1 to " + Locker.MAX_LIST_LIMIT
                + ", not '" + shown + "'");
    }

    private static Map<String, Object> holder(LockOwner owner) {
        if (owner == null) {
            return null;
        }
        Map<String, Object> h = new LinkedHashMap<>();
        h.put("rid", owner.rid());
        h.put("host", owner.host());
        h.put("pid", owner.pid());
        h.put("thread", owner.thread());
        h.put("why", owner.why());
        h.put("since", owner.since() == null ? null : owner.since().toString());
        return h;
    }
}
