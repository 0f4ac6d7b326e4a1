package dev.locker.springboot;

import dev.locker.api.LockInfo;
import dev.locker.api.LockNames;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.Locker;
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
 * (the previous page's {@code nextCursor}).
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
     * @param limit  page size, or null for 100
     * @param cursor the previous page's {@code nextCursor}, or null for the first page
     * @return {@code locks} (each with key and column in {@link LockNames}' notation, which names the lock exactly and
     *     can be pasted into {@code locker show} or {@code locker release}; holder, fencingToken, expiresAt) and
     *     {@code nextCursor} (null at the end)
     */
    @ReadOperation
    public Map<String, Object> locks(@Nullable String prefix, @Nullable Integer limit, @Nullable String cursor) {
        byte[] keyPrefix = prefix == null ? new byte[0] : LockNames.parse(prefix, "prefix");
        LockPage page = locker.list(keyPrefix, limit == null ? 100 : limit, cursor);
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
