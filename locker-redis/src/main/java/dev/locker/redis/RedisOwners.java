package dev.locker.redis;

import dev.locker.api.LockOwner;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Owner metadata stored once per locker instance instead of once per claim: what keeps a held lock at about 190 bytes
 * of Redis memory (a claim of a few dozen bytes, see {@code common.lua}) while {@code holder()}, listings and the
 * exceptions that name a holder still show its rid, host, pid, thread and reason.
 *
 * <p>The owner record is a hash, {@code <prefix>{}o<instance>}: {@code r} the rid, {@code h} the host, {@code p} the
 * pid, and one field per (thread, reason) pair the locker claimed with, numbered from 0, valued {@code <length of the
 * thread's name in UTF-8 bytes>:<thread><reason>}. A claim names its pair by that number. Entries are only ever
 * added, so a reader may cache a record and read it again only when it meets a number it does not know. The record
 * lives {@link #ttl} and is written again when a quarter of that has passed since its last writing (by the next
 * acquire or renewal), and when an acquire finds it gone (on a single server the acquire script looks, at most once a
 * second: a restart without persistence, a flush); its life is cut to twice the expiry when the locker closes. A
 * locker that claims with more than {@link #MAX_REFS} distinct pairs (a reason per acquire, say) stores the owner of
 * the further ones in full in the claim ({@code "="} and the owner's bytes), as one whose host or pid is not its own.
 *
 * <p>Owner metadata is for display: no decision of the protocol reads it. A record that is gone (expired, lost in a
 * restart, another Cluster node's failover) leaves the holder named by its instance id only.
 */
final class RedisOwners {

    private static final Logger log = LoggerFactory.getLogger(RedisOwners.class);

    /** Distinct (thread, reason) pairs one locker stores by reference; further ones go in full into their claims. */
    static final int MAX_REFS = 1024;
    /** Records of other lockers kept by a reader (they are small; the cache is dropped when it grows past this). */
    private static final int MAX_CACHED = 4096;
    private static final byte[] INLINE = {'='};

    private final UnifiedJedis client;
    private final RedisKeys keys;
    private final RedisListing.Retries retries;
    private final LongSupplier nanoTime;
    private final String instance;
    private final byte[] ownKey;
    private final String rid;
    private final String host;
    private final long pid;
    private final Duration ttl;
    private final Duration afterClose;

    private final ConcurrentHashMap<Pair, byte[]> refs = new ConcurrentHashMap<>();
    private final List<Pair> entries = new ArrayList<>(); // guarded by this
    /** When the whole record was last written (nanoTime), or stale. */
    private volatile long writtenAt;
    private volatile boolean stale = true;
    private final ConcurrentHashMap<String, Record> others = new ConcurrentHashMap<>();

    private record Pair(String thread, String why) {
    }

    /** Another locker's record as read: rid, host, pid and its pairs by number. */
    private record Record(String rid, String host, long pid, Map<Integer, Pair> pairs) {
    }

    RedisOwners(UnifiedJedis client, RedisKeys keys, RedisListing.Retries retries, LongSupplier nanoTime,
            String instance, String rid, String host, long pid, Duration expiry) {
        this.client = client;
        this.keys = keys;
        this.retries = retries;
        this.nanoTime = nanoTime;
        this.instance = instance;
        this.ownKey = keys.ownerKey(instance);
        this.rid = rid;
        this.host = host == null ? "" : host;
        this.pid = pid;
        Duration day = Duration.ofDays(1);
        Duration four = expiry.multipliedBy(4);
        this.ttl = four.compareTo(day) > 0 ? four : day;
        this.afterClose = expiry.multipliedBy(2).plusSeconds(1);
    }

    /** When the acquire script last found this locker's record on the server (nanoTime). */
    private volatile long checkedAt;
    private volatile boolean everChecked;

    /** True when an acquire at {@code now} (nanoTime) should ask the server whether the record still exists. */
    boolean checkDue(long now) {
        return !everChecked || now - checkedAt >= 1_000_000_000L;
    }

    /** The acquire script found the record at {@code at} (nanoTime, read before the script was sent). */
    void checked(long at) {
        checkedAt = at;
        everChecked = true;
    }

    /** This locker's owner record's key (the acquire script tells whether it still exists). */
    byte[] ownKey() {
        return ownKey;
    }

    /**
     * The owner part of a claim for {@code owner}: a reference into this locker's record (written first when the pair
     * is new or the record due), or the owner in full when it is not this locker's or the record is full.
     */
    byte[] claimPart(LockOwner owner) {
        if (!owner.rid().equals(rid) || !owner.host().equals(host) || owner.pid() != pid) {
            return inline(owner);
        }
        Pair pair = new Pair(owner.thread(), owner.why());
        byte[] ref = refs.get(pair);
        if (ref != null && !stale && nanoTime.getAsLong() - writtenAt < ttl.toNanos() / 4) {
            return ref;
        }
        return slowPart(pair, owner);
    }

    private synchronized byte[] slowPart(Pair pair, LockOwner owner) {
        byte[] ref = refs.get(pair);
        boolean due = stale || nanoTime.getAsLong() - writtenAt >= ttl.toNanos() / 4;
        if (ref == null) {
            if (entries.size() >= MAX_REFS) {
                if (due) {
                    writeAll();
                }
                return inline(owner);
            }
            int n = entries.size();
            entries.add(pair);
            try {
                if (due) {
                    writeAll();
                } else {
                    write(List.of(num(n), entry(pair)));
                }
            } catch (RuntimeException e) {
                entries.remove(n);
                throw e;
            }
            ref = num(n);
            refs.put(pair, ref);
            return ref;
        }
        if (due) {
            writeAll();
        }
        return ref;
    }

    /** Writes the whole record again, e.g. when the acquire script found it gone; a failure leaves it due. */
    void rewrite() {
        stale = true;
        try {
            synchronized (this) {
                writeAll();
            }
        } catch (RuntimeException e) {
            log.debug("Could not write the owner record of {} ({}); the next acquire tries again", rid, e.toString());
        }
    }

    /** Renewals keep the record alive too, for a locker that holds leases for days without acquiring. */
    void touch() {
        if (!refs.isEmpty() && (stale || nanoTime.getAsLong() - writtenAt >= ttl.toNanos() / 4)) {
            rewrite();
        }
    }

    /** The locker closes: its claims live at most one expiry more, so the record need not live much longer. */
    void close() {
        if (refs.isEmpty()) {
            return;
        }
        try {
            client.pexpire(ownKey, afterClose.toMillis());
        } catch (RuntimeException e) {
            log.debug("Could not shorten the owner record of {} ({})", rid, e.toString());
        }
    }

    private void writeAll() { // holds this
        List<byte[]> fields = new ArrayList<>(6 + 2 * entries.size());
        fields.add(new byte[]{'r'});
        fields.add(utf8(rid));
        fields.add(new byte[]{'h'});
        fields.add(utf8(host));
        fields.add(new byte[]{'p'});
        fields.add(num(pid));
        for (int i = 0; i < entries.size(); i++) {
            fields.add(num(i));
            fields.add(entry(entries.get(i)));
        }
        long at = nanoTime.getAsLong();
        write(fields);
        writtenAt = at;
        stale = false;
    }

    private void write(List<byte[]> fields) {
        List<byte[]> args = new ArrayList<>(fields.size() + 1);
        args.add(num(ttl.toMillis()));
        args.addAll(fields);
        retries.run(() -> RedisScript.OWNER.run(client, ownKey, args));
    }

    // ---- reading --------------------------------------------------------------------------------------------------

    /**
     * The owner a claim names: {@code field} is the claim's field ({@code "c" + instance}), {@code value} its value
     * (see {@code common.lua}). Reads the claiming locker's record when this reader does not know the reference yet.
     */
    LockOwner owner(byte[] field, byte[] value) {
        Claim c = Claim.parse(value);
        if (c == null) {
            return new LockOwner("(unreadable claim)", "", 0, "", "", null);
        }
        Instant since = micros(c.written);
        byte[] part = c.owner;
        if (part.length > 0 && part[0] == '=') {
            try {
                return LockOwner.fromBytes(Arrays.copyOfRange(part, 1, part.length)).withSince(since);
            } catch (IllegalArgumentException e) {
                return new LockOwner("(unreadable claim)", "", 0, "", "", since);
            }
        }
        int ref;
        try {
            ref = Integer.parseInt(new String(part, StandardCharsets.US_ASCII));
        } catch (NumberFormatException e) {
            return new LockOwner("(unreadable claim)", "", 0, "", "", since);
        }
        String inst = field == null || field.length < 2 ? "" : new String(field, 1, field.length - 1,
                StandardCharsets.UTF_8);
        if (inst.equals(instance)) {
            Pair p;
            synchronized (this) {
                p = ref < entries.size() ? entries.get(ref) : null;
            }
            if (p != null) {
                return new LockOwner(rid, host, pid, p.thread, p.why, since);
            }
        }
        Record r = others.get(inst);
        if (r == null || !r.pairs.containsKey(ref)) {
            r = read(inst);
        }
        if (r == null) {
            return new LockOwner("instance:" + inst, "", 0, "", "", since); // its owner record is gone
        }
        Pair p = r.pairs.get(ref);
        return new LockOwner(r.rid, r.host, r.pid, p == null ? "" : p.thread, p == null ? "" : p.why, since);
    }

    private Record read(String inst) {
        Map<byte[], byte[]> all = retries.run(() -> client.hgetAll(keys.ownerKey(inst)));
        if (all == null || all.isEmpty()) {
            others.remove(inst);
            return null;
        }
        String r = null;
        String h = "";
        long p = 0;
        Map<Integer, Pair> pairs = new java.util.HashMap<>();
        for (Map.Entry<byte[], byte[]> e : all.entrySet()) {
            String f = new String(e.getKey(), StandardCharsets.UTF_8);
            String v = new String(e.getValue(), StandardCharsets.UTF_8);
            switch (f) {
                case "r" -> r = v;
                case "h" -> h = v;
                case "p" -> p = parseLong(v);
                default -> {
                    Pair pair = pair(e.getValue());
                    try {
                        if (pair != null) {
                            pairs.put(Integer.parseInt(f), pair);
                        }
                    } catch (NumberFormatException ignored) {
                        // not a field of ours
                    }
                }
            }
        }
        if (r == null) {
            return null;
        }
        Record rec = new Record(r, h, p, Map.copyOf(pairs));
        if (others.size() >= MAX_CACHED) {
            others.clear();
        }
        others.put(inst, rec);
        return rec;
    }

    /** A claim's value, parsed as {@code common.lua} writes it; null for a value of another shape. */
    record Claim(long written, long expiryMicros, long token, byte[] owner) {

        static Claim parse(byte[] v) {
            long[] n = new long[3];
            int at = 0;
            for (int i = 0; i < 3; i++) {
                int start = at;
                long x = 0;
                while (at < v.length && v[at] >= '0' && v[at] <= '9' && at - start < 18) {
                    x = x * 10 + (v[at++] - '0');
                }
                if (at == start || at >= v.length || v[at] != ' ') {
                    return null;
                }
                n[i] = x;
                at++;
            }
            int start = at; // the counter, hex
            while (at < v.length && Character.digit(v[at], 16) >= 0) {
                at++;
            }
            if (at == start || at >= v.length || v[at] != ' ') {
                return null;
            }
            return new Claim(n[0], n[0] + n[1] * 1000, n[0] + n[2], Arrays.copyOfRange(v, at + 1, v.length));
        }
    }

    static Instant micros(long us) {
        return Instant.ofEpochSecond(Math.floorDiv(us, 1_000_000L), Math.floorMod(us, 1_000_000L) * 1000L);
    }

    private static byte[] inline(LockOwner owner) {
        byte[] b = owner.toBytes();
        byte[] out = new byte[b.length + 1];
        out[0] = INLINE[0];
        System.arraycopy(b, 0, out, 1, b.length);
        return out;
    }

    private static byte[] entry(Pair p) {
        byte[] t = utf8(p.thread);
        return utf8(t.length + ":" + p.thread + p.why);
    }

    private static Pair pair(byte[] v) {
        int colon = 0;
        int len = 0;
        while (colon < v.length && v[colon] >= '0' && v[colon] <= '9' && colon < 9) {
            len = len * 10 + (v[colon++] - '0');
        }
        if (colon == 0 || colon >= v.length || v[colon] != ':' || len > v.length - colon - 1) {
            return null;
        }
        return new Pair(new String(v, colon + 1, len, StandardCharsets.UTF_8),
                new String(v, colon + 1 + len, v.length - colon - 1 - len, StandardCharsets.UTF_8));
    }

    private static byte[] num(long n) {
        return Long.toString(n).getBytes(StandardCharsets.US_ASCII);
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static long parseLong(String s) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
