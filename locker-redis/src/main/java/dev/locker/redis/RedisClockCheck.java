package dev.locker.redis;

import dev.locker.spi.DeploymentCheck.Finding;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The doctor's {@code server-clocks} check: TIME on every server that may judge a claim, against
 * {@code serverClockSkew}. A failover or slot migration hands a claim's expiry to another server's clock.
 */
final class RedisClockCheck {

    private RedisClockCheck() {
    }

    /**
     * Reads TIME on every server that may judge a claim: each node given (a Cluster's masters and replicas), and on
     * a single server its replicas too, which a failover may promote. Each reading is placed against this host's
     * clock at the middle of its round trip, so half the round trip bounds its error.
     */
    static Finding serverClocks(String uri, Map<String, RedisNode> nodes, Duration skew) {
        Map<String, long[]> offsets = new LinkedHashMap<>(); // server -> {offset us, uncertainty us}
        List<String> unread = new ArrayList<>();
        for (Map.Entry<String, RedisNode> e : nodes.entrySet()) {
            String name = e.getKey().isEmpty() ? "master" : e.getKey();
            read(name, e.getValue(), offsets, unread);
            if (!e.getValue().cluster()) {
                for (String replica : replicasOf(e.getValue())) {
                    String[] hostPort = replica.split(":");
                    try (UnifiedJedis c = RedisLocker.builder().uri(uri).clearNodes().cluster(false)
                            .node(hostPort[0], Integer.parseInt(hostPort[1])).newClient(1, 1)) {
                        read(replica, new RedisNode() {
                            @Override
                            public Object call(String... args) {
                                return c.sendCommand(RedisNode.command(args[0]));
                            }

                            @Override
                            public boolean cluster() {
                                return false;
                            }
                        }, offsets, unread);
                    } catch (JedisException | IllegalArgumentException ex) {
                        unread.add(replica);
                    }
                }
            }
        }
        long low = Long.MAX_VALUE;
        long high = Long.MIN_VALUE;
        long error = 0;
        for (long[] o : offsets.values()) {
            low = Math.min(low, o[0]);
            high = Math.max(high, o[0]);
            error = Math.max(error, o[1]);
        }
        long spreadMs = offsets.isEmpty() ? 0 : (high - low) / 1000;
        long errorMs = 2 * error / 1000 + 1;
        String seen = offsets.size() + " server clock(s) read" + (offsets.size() > 1 ? ", " + spreadMs + " ms apart (±"
                + errorMs + " ms)" : "") + (unread.isEmpty() ? "" : "; not read: " + unread);
        String fix = "keep the servers' clocks in sync (NTP or chrony), or raise serverClockSkew in the URI to at "
                + "least the largest difference you expect";
        if (offsets.size() > 1 && spreadMs - errorMs > skew.toMillis()) {
            return Finding.fail("server-clocks", seen + ": further apart than serverClockSkew=" + RedisDoctor.format(skew)
                    + ", so a failover or slot migration can end a claim while its holder still counts on it", fix);
        }
        if (!unread.isEmpty()) {
            return Finding.warn("server-clocks", seen + ": a failover to an unread server may end claims early by "
                    + "its clock's difference", "run the doctor where it can reach every server, with the URI's "
                    + "credentials allowed TIME");
        }
        if (offsets.size() > 1 && skew.isZero()) {
            return Finding.warn("server-clocks", seen + ", and serverClockSkew=0: a failover or slot migration "
                    + "hands a claim's expiry to another server's clock, which may end it early", "set serverClockSkew "
                    + "in the URI (e.g. 1s with NTP), under half the expiry");
        }
        return Finding.ok("server-clocks", seen + (offsets.size() > 1 ? ", within serverClockSkew=" + RedisDoctor.format(skew)
                : ": one clock judges every claim"));
    }

    private static void read(String name, RedisNode node, Map<String, long[]> offsets, List<String> unread) {
        try {
            long before = System.currentTimeMillis() * 1000;
            Object reply = node.call("TIME");
            long after = System.currentTimeMillis() * 1000;
            if (reply instanceof List<?> l && l.size() == 2) {
                long server = Long.parseLong(RedisNode.text(l.get(0))) * 1_000_000 + Long.parseLong(RedisNode.text(l.get(1)));
                offsets.put(name, new long[]{server - (before + after) / 2, (after - before) / 2 + 1000});
                return;
            }
        } catch (JedisException | NumberFormatException e) {
            // unread, said below
        }
        unread.add(name);
    }

    /** The replicas a single server names in INFO replication ("host:port"), online or not. */
    private static List<String> replicasOf(RedisNode node) {
        Map<String, String> r = RedisNode.info(node, "replication");
        List<String> out = new ArrayList<>();
        if (r == null) {
            return out;
        }
        for (Map.Entry<String, String> e : r.entrySet()) {
            if (e.getKey().matches("slave\\d+")) {
                String ip = null;
                String port = null;
                for (String kv : e.getValue().split(",")) {
                    if (kv.startsWith("ip=")) {
                        ip = kv.substring(3);
                    } else if (kv.startsWith("port=")) {
                        port = kv.substring(5);
                    }
                }
                if (ip != null && port != null) {
                    out.add(ip + ":" + port);
                }
            }
        }
        return out;
    }
}
