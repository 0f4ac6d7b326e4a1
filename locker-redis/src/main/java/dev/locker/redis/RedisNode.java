package dev.locker.redis;

import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.commands.ProtocolCommand;
import redis.clients.jedis.exceptions.JedisDataException;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** One server as {@link RedisDoctor} talks to it: a command with string arguments, its raw reply; nothing written. */
interface RedisNode {

    Object call(String... args);

    /** True for a node of a Cluster. */
    boolean cluster();

    /** The servers behind {@code client}: a Cluster's nodes by name, or the single server under the name "". */
    static Map<String, RedisNode> of(UnifiedJedis client) {
        Map<String, RedisNode> out = new LinkedHashMap<>();
        if (client instanceof RedisClusterClient cc) {
            for (Map.Entry<String, ConnectionPool> e : cc.getClusterNodes().entrySet()) {
                ConnectionPool pool = e.getValue();
                out.put(e.getKey(), new RedisNode() {
                    @Override
                    public Object call(String... args) {
                        try (Connection c = pool.getResource()) {
                            CommandArguments a = new CommandArguments(command(args[0]));
                            for (int i = 1; i < args.length; i++) {
                                a.add(args[i]);
                            }
                            return c.executeCommand(a);
                        }
                    }

                    @Override
                    public boolean cluster() {
                        return true;
                    }
                });
            }
            return out;
        }
        out.put("", new RedisNode() {
            @Override
            public Object call(String... args) {
                String[] rest = new String[args.length - 1];
                System.arraycopy(args, 1, rest, 0, rest.length);
                return client.sendCommand(command(args[0]), rest);
            }

            @Override
            public boolean cluster() {
                return false;
            }
        });
        return out;
    }

    static ProtocolCommand command(String name) {
        byte[] raw = name.toUpperCase(Locale.ROOT).getBytes(StandardCharsets.US_ASCII);
        return () -> raw;
    }

    /** An INFO section as a map; null when the server refuses it (no check may read that as an empty section). */
    static Map<String, String> info(RedisNode node, String section) {
        Object reply;
        try {
            reply = node.call("INFO", section);
        } catch (JedisDataException refused) {
            return null;
        }
        Map<String, String> out = new HashMap<>();
        String text = reply instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : String.valueOf(reply);
        for (String line : text.split("\r?\n")) {
            int colon = line.indexOf(':');
            if (colon > 0 && !line.startsWith("#")) {
                out.put(line.substring(0, colon), line.substring(colon + 1).trim());
            }
        }
        return out;
    }

    /** A CONFIG GET value, or null when it is refused (ACL, a renamed CONFIG) or unknown. */
    static String config(RedisNode node, String name) {
        try {
            Object reply = node.call("CONFIG", "GET", name);
            if (reply instanceof List<?> l && l.size() >= 2) {
                Object v = l.get(1);
                return v instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : String.valueOf(v);
            }
            return null;
        } catch (JedisDataException refused) {
            return null;
        }
    }

    /** A reply element as text. */
    static String text(Object o) {
        return o instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : String.valueOf(o);
    }
}
