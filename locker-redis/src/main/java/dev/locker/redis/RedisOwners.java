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
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;

/**
 * Owner metadata stored once per locker instance instead of once per claim: what keeps a held lock at about 190 bytes
 * of Redis memory (a claim of a few dozen bytes, see {@code common.lua}) while {@code holder()}, listings and the
 * exceptions that name a holder still show its rid, host, pid, thread and reason.
 *
 * <p>The owner record is a hash, {@code <prefix>{}o<instance>}: {@code r} the rid, {@code h} the host, {@code p} the
 * pid, and one field per (thread, reason) pair the locker claimed with, numbered from 0, valued {@code <length of the
 * thread's name in UTF-8 bytes>:<thread><reason>}. A claim names its pair by that number. Entries are only ever
 * added, so a reader may cache a record and read it again only when it meets a number it does not know. One writer
 * task per locker (on a shared pool of daemon threads) writes the record: whole when it is new, found lost, or a
 * quarter of its time to live {@link #ttl()} old; else only the pairs the server lacks. A pair's first claim waits for
 * that write ({@link #FIRST_WRITE_WAIT} at most); the writer also looks, at most once a second while the locker
 * acquires, whether the server still has the record up to its newest pair (a restart, a flush, an older snapshot, a
 * failover), on any kind of client and in a Cluster. Closing the locker cuts the record's life to twice the expiry,
 * also after a write that raced the close. A locker that claims with more than {@link #MAX_REFS} distinct pairs (a
 * reason per acquire, say) stores the owner of the further ones in full in the claim ({@code "="} and the owner's
 * bytes), as one whose host or pid is not its own.
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
    /**
     * The longest claim expiry this locker has used: the configured one, or a lease's longer own. The record's life
     * follows it, so that no claim outlives the record it refers to.
     */
    private final AtomicReference<Life> life;

    private final ConcurrentHashMap<Pair, byte[]> refs = new ConcurrentHashMap<>();
    private final List<Pair> entries = new ArrayList<>(); // guarded by this; a number is never given to another pair
    /** How many of the entries the server is known to have: those writes that succeeded carried. Written holding this. */
    private volatile int published;
    /** When the record was last written whole (nanoTime, read before the write was sent). */
    private volatile long writtenAt;
    /** True when the record may be missing or incomplete on the server (never written, found so, a write failed). */
    private volatile boolean stale = true;
    private final AtomicBoolean writing = new AtomicBoolean();
    private volatile boolean closed;
    /** When the writer last looked whether the server still has the record (nanoTime). */
    private volatile long checkedAt;
    private volatile boolean checkWanted;
    private final ConcurrentHashMap<String, Record> others = new ConcurrentHashMap<>();
    /** Records that could not be read, and when (nanoTime): not asked again for a few seconds. */
    private final ConcurrentHashMap<String, Long> unreadable = new ConcurrentHashMap<>();

    /** Writes owner records off the lock path: a slow or unreachable master delays display, never a lock. */
    private static final ExecutorService WRITER = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "locker-redis-owner-records");
        t.setDaemon(true);
        return t;
    });

    private record Pair(String thread, String why) {
    }

    /**
     * The longest expiry a claim used, and the record's time to live that follows from it. The time to live is four
     * such expiries, and at least a day. It is worked out once per longer expiry, not on every claim that reads it.
     * Duration's multiplication goes through BigDecimal, some 300 bytes of garbage per call.
     */
    private record Life(Duration longestExpiry, Duration ttl) {
        static Life of(Duration longestExpiry) {
            Duration four = longestExpiry.multipliedBy(4);
            Duration day = Duration.ofDays(1);
            return new Life(longestExpiry, four.compareTo(day) > 0 ? four : day);
        }
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
        this.life = new AtomicReference<>(Life.of(expiry));
    }

    /**
     * The owner part of a claim for {@code owner}: a reference into this locker's record, or the owner in full when it
     * is not this locker's or the record is full ({@link #MAX_REFS}). A pair's first claim waits for the record's write
     * (one round trip, once per pair) for at most {@link #FIRST_WRITE_WAIT}: a record's master that is slow or down
     * (another master in a Cluster) delays that claim by so much at most and never fails it, and readers name the
     * holder by its instance until the record is written.
     */
    byte[] claimPart(LockOwner owner) {
        if (!owner.rid().equals(rid) || !owner.host().equals(host) || owner.pid() != pid) {
            return inline(owner);
        }
        Pair pair = new Pair(owner.thread(), owner.why());
        byte[] ref = refs.get(pair);
        long now = nanoTime.getAsLong();
        if (ref == null) {
            ref = number(pair);
            if (ref == null) {
                return inline(owner); // the record is full
            }
            writeSoon();
            awaitPublished(index(ref), FIRST_WRITE_WAIT);
            return ref;
        }
        if (stale || now - writtenAt >= ttl().toNanos() / 4 || index(ref) >= publishedCount()) {
            writeSoon();
        } else if (now - checkedAt >= CHECK_EVERY) {
            checkWanted = true; // look whether a restart, a flush or a failover lost the record: at most once a second
            writeSoon();
        }
        return ref;
    }

    /** A pair's first claim waits this long at most for the record's write. */
    static final long FIRST_WRITE_WAIT = 200_000_000L;
    private static final long CHECK_EVERY = 1_000_000_000L;

    private synchronized byte[] number(Pair pair) {
        byte[] ref = refs.get(pair);
        if (ref == null && entries.size() < MAX_REFS) {
            ref = num(entries.size());
            entries.add(pair);
            refs.put(pair, ref);
        }
        return ref;
    }

    private int publishedCount() {
        return published;
    }

    private synchronized void awaitPublished(int index, long nanos) {
        long end = System.nanoTime() + nanos;
        try {
            while (published <= index && !closed) {
                long left = end - System.nanoTime();
                if (left <= 0) {
                    return;
                }
                wait(Math.max(1, left / 1_000_000));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A claim is written or renewed for {@code expiry}: the record lives at least as long as such a claim can. */
    void covers(Duration expiry) {
        Life seen = life.get();
        while (expiry.compareTo(seen.longestExpiry()) > 0 && !life.compareAndSet(seen, Life.of(expiry))) {
            seen = life.get(); // another claim raised it meanwhile, and ours may still be longer
        }
    }

    /** How long a whole write keeps the record: four of the longest expiries, and at least a day. */
    private Duration ttl() {
        return life.get().ttl();
    }

    /** How long the record outlives a close: each claim lives one expiry at most, a hold-at-least included. */
    private Duration afterClose() {
        return life.get().longestExpiry().multipliedBy(2).plusSeconds(1);
    }

    /** Renewals keep the record alive too, for a locker that holds leases for days without acquiring. */
    void touch() {
        if (!refs.isEmpty() && (stale || nanoTime.getAsLong() - writtenAt >= ttl().toNanos() / 4)) {
            writeSoon();
        }
    }

    /** The locker closes: its claims live at most one expiry more, so the record need not live much longer. */
    void close() {
        closed = true;
        synchronized (this) {
            notifyAll();
        }
        if (refs.isEmpty()) {
            return;
        }
        shorten();
    }

    private void shorten() {
        try {
            client.pexpire(ownKey, afterClose().toMillis());
        } catch (RuntimeException e) {
            log.debug("Could not shorten the owner record of {} ({})", rid, e.toString());
        }
    }

    /** Starts the writer for this record unless it runs: it writes what is due, then looks if a look is wanted. */
    private void writeSoon() {
        if (closed || !writing.compareAndSet(false, true)) {
            return;
        }
        try {
            WRITER.execute(this::writer);
        } catch (RejectedExecutionException e) {
            writing.set(false);
        }
    }

    private void writer() {
        try {
            while (!closed) {
                if (checkWanted) {
                    checkWanted = false;
                    look();
                }
                boolean full = stale || nanoTime.getAsLong() - writtenAt >= ttl().toNanos() / 4;
                if (!full && publishedCount() >= entriesCount()) {
                    break;
                }
                write(full);
            }
            if (closed && !refs.isEmpty()) {
                shorten(); // a write that raced close() must not leave the record its full time to live
            }
        } catch (RuntimeException e) {
            stale = true;
            log.debug("Could not write the owner record of {} ({}); claims name this locker by its instance until it "
                    + "is written", rid, e.toString());
        } finally {
            writing.set(false);
        }
        if (!closed && !stale && (checkWanted || publishedCount() < entriesCount())) {
            writeSoon(); // asked for while the writer was ending
        }
    }

    private synchronized int entriesCount() {
        return entries.size();
    }

    /** Whether the server still has the record up to its newest pair (a restart, a flush, an older snapshot). */
    private void look() {
        long at = nanoTime.getAsLong();
        int n = publishedCount();
        byte[] newest = retries.run(() -> client.hget(ownKey, n == 0 ? new byte[]{'r'} : num(n - 1)));
        byte[] named = newest == null || n == 0 ? newest : retries.run(() -> client.hget(ownKey, new byte[]{'r'}));
        checkedAt = at;
        if (newest == null || named == null) {
            stale = true; // the next write is a whole one
        }
    }

    /** Writes the record whole ({@code full}), or its pairs the server does not have yet; then its time to live. */
    private void write(boolean full) {
        List<byte[]> args;
        int n;
        synchronized (this) {
            n = entries.size();
            int from = full ? 0 : published;
            args = new ArrayList<>(7 + 2 * (n - from));
            args.add(num(ttl().toMillis()));
            if (full) {
                args.add(new byte[]{'r'});
                args.add(utf8(rid));
                args.add(new byte[]{'h'});
                args.add(utf8(host));
                args.add(new byte[]{'p'});
                args.add(num(pid));
            }
            for (int i = from; i < n; i++) {
                args.add(num(i));
                args.add(entry(entries.get(i)));
            }
        }
        long at = nanoTime.getAsLong();
        retries.run(() -> RedisScript.OWNER.run(client, ownKey, args));
        if (full) {
            writtenAt = at;
            checkedAt = at;
            stale = false;
        }
        synchronized (this) {
            published = Math.max(published, n);
            notifyAll();
        }
    }

    /** For tests: waits until no write of the record is under way. */
    void awaitWrites() throws InterruptedException {
        while (writing.get()) {
            Thread.sleep(1);
        }
    }

    private static int index(byte[] ref) {
        int n = 0;
        for (byte b : ref) {
            n = n * 10 + (b - '0');
        }
        return n;
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
        String inst = field == null || field.length < 2 ? "" : new String(field, 1, Math.min(16, field.length - 1),
                StandardCharsets.UTF_8);
        return ownerOf(inst, c.owner, micros(c.written));
    }

    /** The owner of a queue entry: {@code field} is {@code "q" + waiter} (the instance, then the wait), {@code part}
     * the owner part the waiter queued with. */
    LockOwner queued(byte[] field, byte[] part) {
        String inst = field == null || field.length < 17 ? "" : new String(field, 1, 16, StandardCharsets.UTF_8);
        return ownerOf(inst, part, null);
    }

    private LockOwner ownerOf(String inst, byte[] part, Instant since) {
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
        if (inst.equals(instance)) {
            Pair p;
            synchronized (this) {
                p = ref >= 0 && ref < entries.size() ? entries.get(ref) : null;
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
        if (p == null) { // a record restored from an older snapshot, not yet written again by its locker
            return new LockOwner(r.rid, r.host, r.pid, "(unknown)", "(unknown: not in the owner record)", since);
        }
        return new LockOwner(r.rid, r.host, r.pid, p.thread, p.why, since);
    }

    private Record read(String inst) {
        Long failed = unreadable.get(inst);
        if (failed != null && nanoTime.getAsLong() - failed < 5_000_000_000L) {
            return null; // its master did not answer a moment ago: show the instance rather than wait again
        }
        Map<byte[], byte[]> all;
        try {
            all = retries.run(() -> client.hgetAll(keys.ownerKey(inst)));
        } catch (RuntimeException e) { // display only: the holder is named by its instance
            log.debug("Could not read the owner record of instance {} ({})", inst, e.toString());
            if (unreadable.size() >= MAX_CACHED) {
                unreadable.clear();
            }
            unreadable.put(inst, nanoTime.getAsLong());
            return null;
        }
        unreadable.remove(inst);
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
            Claim c = parseCompact(v);
            return c != null ? c : parseFormer(v);
        }

        /** The layout of earlier 0.1.0 snapshots: {@code "<written> <expiry µs> <token> <nonce>\n<owner bytes>"}. */
        private static Claim parseFormer(byte[] v) {
            int nl = 0;
            while (nl < v.length && v[nl] != '\n') {
                nl++;
            }
            if (nl == v.length) {
                return null;
            }
            String[] h = new String(v, 0, nl, StandardCharsets.US_ASCII).split(" ");
            try {
                if (h.length != 4) {
                    return null;
                }
                byte[] owner = new byte[v.length - nl];
                owner[0] = '=';
                System.arraycopy(v, nl + 1, owner, 1, v.length - nl - 1);
                return new Claim(Long.parseLong(h[0]), Long.parseLong(h[1]), Long.parseLong(h[2]), owner);
            } catch (NumberFormatException e) {
                return null;
            }
        }

        private static Claim parseCompact(byte[] v) {
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
        byte[] w = utf8(p.why);
        byte[] len = (t.length + ":").getBytes(StandardCharsets.US_ASCII);
        byte[] out = Arrays.copyOf(len, len.length + t.length + w.length);
        System.arraycopy(t, 0, out, len.length, t.length);
        System.arraycopy(w, 0, out, len.length + t.length, w.length);
        return out;
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
