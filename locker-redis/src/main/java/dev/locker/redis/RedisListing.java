package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.LockOwner;
import dev.locker.api.LockPage;
import dev.locker.api.TemporaryLockingException;
import dev.locker.engine.ListCursor;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisNoScriptException;
import redis.clients.jedis.exceptions.JedisRedirectionException;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * One page of {@link RedisLocker#list}: {@code SCAN} with a {@code MATCH} pattern over the database (each master in
 * turn in Redis Cluster), then {@code list.lua} on the keys of each batch, which reads their senior live claims on the
 * server's clock exactly as {@code holder.lua} does, without changing anything.
 *
 * <p>Why SCAN: a lock's key is {@code prefix{tag}encoded-lock}, and the tag (a hash of the lock, for Cluster slots)
 * comes before the lock's name, so no key order follows the names. The {@code MATCH} pattern still pins the key prefix
 * at its fixed offset ({@link RedisKeys#listPattern}), so only candidate keys cross the network; each is checked again
 * on its decoded lock. What it costs: a whole listing walks the whole database (every master), about
 * {@code keys / COUNT} SCAN calls plus one script call per batch that found candidates (one pipelined round trip per
 * batch in Cluster mode, one script per key since keys of different slots cannot share a script); one {@code list} call
 * makes at most {@value #SCANS_PER_CALL} SCANs, so pages may be short, or empty, with a cursor.
 *
 * <p>The cursor holds the node (a master's id in Cluster mode), the SCAN cursor and, when a page filled up within a
 * batch, the batch's COUNT and the last key listed: the next call repeats that SCAN with the same COUNT (same
 * buckets) and skips the keys up to that one, so each call keeps at most one batch in memory. SCAN's own guarantee
 * applies: a lock held throughout is listed; one may be listed twice if Redis resized its table meanwhile, or missed
 * while its slot migrates between masters.
 */
final class RedisListing {

    static final int SCANS_PER_CALL = 8;
    private static final String CURSOR_TAG = "redis1";
    private static final byte[] NONE = new byte[0];
    private static final byte[] START = ScanParams.SCAN_POINTER_START_BINARY;

    /** Runs a read with the locker's retry policy for broken connections. */
    interface Retries {
        <T> T run(Supplier<T> op);
    }

    private final UnifiedJedis client;
    private final RedisKeys keys;
    private final String server;
    private final Retries retries;
    private final RedisOwners owners;

    RedisListing(UnifiedJedis client, RedisKeys keys, String server, Retries retries, RedisOwners owners) {
        this.owners = owners;
        this.client = client;
        this.keys = keys;
        this.server = server;
        this.retries = retries;
    }

    LockPage page(byte[] keyPrefix, int limit, String cursor) {
        Position at = Position.decode(cursor);
        byte[] pattern = keys.listPattern(keyPrefix);
        int defaultCount = Math.min(1000, Math.max(250, 2 * limit));
        List<NodeRef> nodes = nodes();
        int node = 0;
        if (cursor != null) {
            node = indexOf(nodes, at.node);
        }
        byte[] scanCursor = at.scan;
        int count = at.after.length > 0 ? at.count : defaultCount;
        byte[] after = at.after;
        List<LockInfo> out = new ArrayList<>();
        int scans = 0;
        while (true) {
            try (Node n = open(nodes.get(node))) {
                while (true) {
                    if (scans++ == SCANS_PER_CALL) {
                        return new LockPage(out, new Position(nodes.get(node).id, scanCursor, 0, NONE).encode());
                    }
                    ScanResult<byte[]> batch = n.scan(scanCursor, new ScanParams().match(pattern).count(count));
                    List<Found> found = candidates(batch.getResult(), keyPrefix, after);
                    List<?> claims = found.isEmpty() ? List.of() : n.claims(found.stream().map(f -> f.key).toList());
                    for (int i = 0; i < found.size(); i++) {
                        LockInfo held = info(found.get(i).lock, claims.get(i), owners);
                        if (held == null) {
                            continue;
                        }
                        if (out.size() == limit) { // full (only ever by this batch), and it holds more: go on from
                            // the last key listed, repeating this SCAN with the same COUNT next time
                            return new LockPage(out, new Position(nodes.get(node).id, scanCursor, count, after).encode());
                        }
                        out.add(held);
                        after = found.get(i).key;
                    }
                    after = NONE;
                    count = defaultCount;
                    scanCursor = batch.getCursorAsBytes();
                    if (Arrays.equals(scanCursor, START)) {
                        break; // this node is done
                    }
                    if (out.size() == limit) {
                        return new LockPage(out, new Position(nodes.get(node).id, scanCursor, 0, NONE).encode());
                    }
                }
            }
            if (++node == nodes.size()) {
                return new LockPage(out, null);
            }
            if (out.size() == limit) {
                return new LockPage(out, new Position(nodes.get(node).id, START, 0, NONE).encode());
            }
        }
    }

    /** The locks behind the keys of a batch that start with the prefix and sort after {@code after}, in key order. */
    private List<Found> candidates(List<byte[]> scanned, byte[] keyPrefix, byte[] after) {
        List<Found> out = new ArrayList<>();
        for (byte[] key : scanned) {
            if (after.length > 0 && Arrays.compareUnsigned(key, after) <= 0) {
                continue;
            }
            KeyColumn lock = keys.lockOf(key);
            if (lock != null && lock.keyStartsWith(keyPrefix)) {
                out.add(new Found(key, lock));
            }
        }
        out.sort(Comparator.comparing((Found f) -> f.key, Arrays::compareUnsigned));
        return out;
    }

    /** list.lua's {field, value} of a lock's senior claim as a listed lock; null for none. */
    static LockInfo info(KeyColumn lock, Object claim, RedisOwners owners) {
        if (!(claim instanceof List<?> pair) || pair.size() != 2 || !(pair.get(0) instanceof byte[] field)
                || !(pair.get(1) instanceof byte[] value)) {
            return null;
        }
        RedisOwners.Claim c = RedisOwners.Claim.parse(value);
        if (c == null) {
            return null;
        }
        return new LockInfo(lock, owners.owner(field, value), c.token(), RedisOwners.micros(c.expiryMicros()));
    }

    // ---- nodes ------------------------------------------------------------------------------------------------

    /** A place one SCAN runs: the single server ({@code id} empty), or one master of a cluster. */
    private record NodeRef(String id, HostAndPort address) {
    }

    private interface Node extends AutoCloseable {
        ScanResult<byte[]> scan(byte[] cursor, ScanParams params);

        /** list.lua's answer for {@code keys}, one entry per key, in order. */
        List<?> claims(List<byte[]> keys);

        @Override
        void close();
    }

    /** The single server, or the cluster's masters in the order of their ids (asked with CLUSTER SLOTS). */
    private List<NodeRef> nodes() {
        Map<String, ConnectionPool> pools = clusterPools();
        if (pools == null) {
            return List.of(new NodeRef("", null));
        }
        JedisConnectionException last = null;
        for (ConnectionPool pool : new TreeMap<>(pools).values()) {
            try (Connection c = pool.getResource()) {
                return masters(new Jedis(c).clusterSlots());
            } catch (JedisConnectionException e) {
                last = e; // that node is down: ask another
            }
        }
        throw last != null ? last : new TemporaryLockingException("listing: the cluster client of " + server
                + " knows no node", null);
    }

    private static List<NodeRef> masters(List<Object> slots) {
        TreeMap<String, NodeRef> byId = new TreeMap<>();
        for (Object range : slots) {
            List<?> r = (List<?>) range;
            List<?> master = (List<?>) r.get(2);
            String host = new String((byte[]) master.get(0), StandardCharsets.UTF_8);
            int port = ((Long) master.get(1)).intValue();
            String id = master.size() > 2 ? new String((byte[]) master.get(2), StandardCharsets.UTF_8) : host + ":" + port;
            byId.put(id, new NodeRef(id, new HostAndPort(host, port)));
        }
        return List.copyOf(byId.values());
    }

    private int indexOf(List<NodeRef> nodes, String id) {
        for (int i = 0; i < nodes.size(); i++) {
            if (nodes.get(i).id.equals(id)) {
                return i;
            }
        }
        throw new TemporaryLockingException("listing: the node the cursor points at (" + (id.isEmpty() ? "a single server"
                : "master " + id) + ") is not a master of " + server + " now (the topology changed, or the cursor is "
                + "another locker's); start the listing again", null);
    }

    private Node open(NodeRef ref) {
        if (ref.address == null) {
            return new Node() {
                @Override
                public ScanResult<byte[]> scan(byte[] cursor, ScanParams params) {
                    return retries.run(() -> client.scan(cursor, params));
                }

                @Override
                public List<?> claims(List<byte[]> keys) {
                    return (List<?>) retries.run(() -> RedisScript.LIST.run(client, keys, List.of()));
                }

                @Override
                public void close() {
                }
            };
        }
        ConnectionPool pool = clusterPools().get(ref.address.toString());
        if (pool == null) {
            throw new TemporaryLockingException("listing: master " + ref.id + " at " + ref.address + " is not known to "
                    + "the cluster client of " + server + " yet; retry", null);
        }
        Connection c = pool.getResource();
        Jedis node = new Jedis(c);
        return new Node() {
            @Override
            public ScanResult<byte[]> scan(byte[] cursor, ScanParams params) {
                return node.scan(cursor, params);
            }

            @Override
            public List<?> claims(List<byte[]> keys) {
                try {
                    return pipelined(node, keys, false);
                } catch (JedisNoScriptException e) {
                    return pipelined(node, keys, true);
                }
            }

            @Override
            public void close() {
                c.close();
            }
        };
    }

    /** One list.lua call per key (their slots differ), pipelined: one round trip. */
    private static List<?> pipelined(Jedis node, List<byte[]> keys, boolean load) {
        if (load) {
            node.scriptLoad(RedisScript.LIST.source());
        }
        List<Response<Object>> replies = new ArrayList<>(keys.size());
        Pipeline p = node.pipelined();
        for (byte[] key : keys) {
            replies.add(p.evalsha(RedisScript.LIST.shaBytes(), List.of(key), List.of()));
        }
        p.sync();
        List<Object> out = new ArrayList<>(keys.size());
        for (Response<Object> r : replies) {
            try {
                out.add(((List<?>) r.get()).get(0));
            } catch (JedisRedirectionException migrating) {
                out.add(null); // its slot moves to another master meanwhile: not listed here
            }
        }
        return out;
    }

    private Map<String, ConnectionPool> clusterPools() {
        if (client instanceof RedisClusterClient) {
            return ((RedisClusterClient) client).getClusterNodes();
        }
        if (client instanceof JedisCluster) {
            return ((JedisCluster) client).getClusterNodes();
        }
        return null;
    }

    // ---- cursor -------------------------------------------------------------------------------------------------

    private record Found(byte[] key, KeyColumn lock) {
    }

    /**
     * Where a listing goes on: the node's id (empty for a single server), the SCAN cursor, and, within a batch, its
     * COUNT and the last key listed (else 0 and empty).
     */
    private record Position(String node, byte[] scan, int count, byte[] after) {

        static Position decode(String cursor) {
            if (cursor == null) {
                return new Position("", START, 0, NONE);
            }
            byte[][] f = ListCursor.decode(cursor, CURSOR_TAG, 4);
            String scan = new String(f[1], StandardCharsets.US_ASCII);
            String count = new String(f[2], StandardCharsets.US_ASCII);
            if (!scan.matches("[0-9]{1,20}") || !count.matches("[0-9]{1,4}")) {
                throw new IllegalArgumentException("cursor '" + cursor + "' was not issued by a redis listing: pass null "
                        + "for the first page, then each page's nextCursor unchanged");
            }
            int c = Integer.parseInt(count);
            if (f[3].length > 0 && c < 1) {
                throw new IllegalArgumentException("cursor '" + cursor + "' was not issued by a redis listing");
            }
            return new Position(new String(f[0], StandardCharsets.UTF_8), f[1], c, f[3]);
        }

        String encode() {
            return ListCursor.encode(CURSOR_TAG, node.getBytes(StandardCharsets.UTF_8), scan,
                    Integer.toString(count).getBytes(StandardCharsets.US_ASCII), after);
        }
    }
}
