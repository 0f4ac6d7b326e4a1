package dev.locker.redis;

import redis.clients.jedis.BuilderFactory;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.args.Rawable;
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
    static final RedisScript LEAVE = new RedisScript("leave");
    static final RedisScript RELEASE = new RedisScript("release");
    static final RedisScript WITHDRAW = new RedisScript("withdraw");
    static final RedisScript HOLDER = new RedisScript("holder");
    static final RedisScript FORCE = new RedisScript("force");
    static final RedisScript VERIFY = new RedisScript("verify");
    static final RedisScript LIST = new RedisScript("list");
    static final RedisScript DEQUEUE = new RedisScript("dequeue");
    static final RedisScript RECORD = new RedisScript("record");
    /**
     * Without the prelude: it uses none of it. Every script a server loaded stays in its Lua heap, which each garbage
     * collection step walks, so a prelude copy it never runs would cost every later script call.
     */
    static final RedisScript OWNER = new RedisScript("owner", false);

    /** The key counts a script call gives, as arguments. */
    private static final Rawable[] KEY_COUNTS = {arg(new byte[]{'0'}), arg(new byte[]{'1'}), arg(new byte[]{'2'}),
            arg(new byte[]{'3'}), arg(new byte[]{'4'})};

    private final String name;
    private final byte[] source;
    private final byte[] sha;
    private final Rawable sourceArg;
    private final Rawable shaArg;

    private RedisScript(String name) {
        this(name, true);
    }

    private RedisScript(String name, boolean withPrelude) {
        this.name = name;
        this.source = ((withPrelude ? PRELUDE + "\n" : "") + resource(name + ".lua")).getBytes(StandardCharsets.UTF_8);
        this.sha = sha1Hex(source).getBytes(StandardCharsets.US_ASCII);
        this.sourceArg = arg(source);
        this.shaArg = arg(sha);
    }

    /**
     * A script argument (or key) sent as it is. Jedis copies every {@code byte[]} it is given into an argument object
     * of its own, and does not copy a {@link Rawable}: the scripts of the lock path (an acquire and a release per
     * pair, a dozen arguments) pass their constants as Rawables made once and their per-call bytes wrapped, not
     * copied. The bytes must not change while a call uses them (every caller passes a fresh or a constant array).
     */
    static Rawable arg(byte[] bytes) {
        return new Arg(bytes);
    }

    /** See {@link #arg}. */
    private static final class Arg implements Rawable {
        private final byte[] raw;

        Arg(byte[] raw) {
            this.raw = java.util.Objects.requireNonNull(raw, "raw");
        }

        @Override
        public byte[] getRaw() {
            return raw;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Arg a && java.util.Arrays.equals(raw, a.raw);
        }

        @Override
        public int hashCode() {
            return java.util.Arrays.hashCode(raw);
        }
    }

    /**
     * Runs the script on the node that owns its keys (the first {@code keyCount} of {@code keysAndArgs}; in Cluster
     * mode they must share a slot): EVALSHA, or EVAL once if the server lacks it. What {@link #run(UnifiedJedis,
     * byte[], List)} does, without copying an argument.
     */
    Object run(UnifiedJedis client, int keyCount, Rawable... keysAndArgs) {
        try {
            return client.executeCommand(call(Protocol.Command.EVALSHA, shaArg, keyCount, keysAndArgs));
        } catch (JedisNoScriptException e) {
            return client.executeCommand(call(Protocol.Command.EVAL, sourceArg, keyCount, keysAndArgs));
        }
    }

    private static CommandObject<Object> call(Protocol.Command command, Rawable script, int keyCount,
                                              Rawable[] keysAndArgs) {
        CommandArguments a = new CommandArguments(command).add(script).add(KEY_COUNTS[keyCount]);
        for (int i = 0; i < keysAndArgs.length; i++) {
            if (i < keyCount) {
                a.key(keysAndArgs[i]); // marks it a key: Cluster mode routes by its slot
            } else {
                a.add(keysAndArgs[i]);
            }
        }
        return new CommandObject<>(a, BuilderFactory.RAW_OBJECT);
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

    /** A resource next to this class (a script, or a test's frozen copy of an earlier build's scripts), as text. */
    static String resource(String file) {
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
