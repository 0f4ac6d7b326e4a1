package dev.locker.redis;

import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.commands.ScriptingKeyBinaryCommands;
import redis.clients.jedis.exceptions.JedisNoScriptException;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * One of the Lua scripts of the protocol (the shared prelude {@code common.lua} followed by the phase's own file),
 * called by its SHA-1 with {@code EVALSHA}. A server that does not know it yet (first use, restart, failover,
 * {@code SCRIPT FLUSH}) answers NOSCRIPT, and the call is repeated once with {@code EVAL}, which also caches it there:
 * the script text crosses the network once per server, not once per call.
 *
 * <p>Invariant: the source is a constant of this library. Lock names, rids and owners reach a script only as
 * KEYS/ARGV bytes, never as source text.
 */
final class RedisScript {

    private static final String PRELUDE = resource("common.lua");

    static final RedisScript ACQUIRE = new RedisScript("acquire");
    static final RedisScript RENEW = new RedisScript("renew");
    static final RedisScript RELEASE = new RedisScript("release");
    static final RedisScript WITHDRAW = new RedisScript("withdraw");
    static final RedisScript HOLDER = new RedisScript("holder");
    static final RedisScript FORCE = new RedisScript("force");
    static final RedisScript VERIFY = new RedisScript("verify");
    static final RedisScript LIST = new RedisScript("list");
    static final RedisScript DEQUEUE = new RedisScript("dequeue");
    static final RedisScript RECORD = new RedisScript("record");
    static final RedisScript OWNER = new RedisScript("owner");

    private final String name;
    private final byte[] source;
    private final byte[] sha;

    private RedisScript(String name) {
        this.name = name;
        this.source = (PRELUDE + "\n" + resource(name + ".lua")).getBytes(StandardCharsets.UTF_8);
        this.sha = sha1Hex(source).getBytes(StandardCharsets.US_ASCII);
    }

    String name() {
        return name;
    }

    byte[] source() {
        return source.clone();
    }

    /** The SHA-1 the server knows the script by, as hex. */
    String sha() {
        return new String(sha, StandardCharsets.US_ASCII);
    }

    byte[] shaBytes() {
        return sha.clone();
    }

    /** Runs the script on the node that owns {@code key}: EVALSHA, or EVAL once if the server lacks it. */
    Object run(UnifiedJedis client, byte[] key, List<byte[]> args) {
        List<byte[]> keys = List.of(key);
        try {
            return client.evalsha(sha, keys, args);
        } catch (JedisNoScriptException e) {
            return client.eval(source, keys, args);
        }
    }

    /**
     * Runs the script with several keys on one server (a standalone server, or one cluster node for keys of one slot):
     * EVALSHA, or EVAL once if the server lacks it.
     */
    Object run(ScriptingKeyBinaryCommands server, List<byte[]> keys, List<byte[]> args) {
        try {
            return server.evalsha(sha, keys, args);
        } catch (JedisNoScriptException e) {
            return server.eval(source, keys, args);
        }
    }

    private static String resource(String file) {
        try (InputStream in = RedisScript.class.getResourceAsStream(file)) {
            if (in == null) {
                throw new IllegalStateException("missing script resource dev/locker/redis/" + file);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read script resource " + file, e);
        }
    }

    private static String sha1Hex(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-1 is required by the Java platform", e);
        }
    }

    @Override
    public String toString() {
        return name + ".lua(" + sha() + ")";
    }
}
