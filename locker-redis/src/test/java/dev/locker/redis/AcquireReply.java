package dev.locker.redis;

import redis.clients.jedis.commands.HashBinaryCommands;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The acquire script's reply as tests read it. A grant without a warning is the bare token (an integer reply, the
 * cheapest for the server to make: see acquire.lua); tests that call the script directly read it as the list the script
 * gives otherwise, {@code {1, token, written}}, with the written time read from the claim the grant wrote.
 */
final class AcquireReply {

    private AcquireReply() {
    }

    /** {@code reply} as a list; {@code field} is the field of the claim the acquire wrote, in {@code key}'s hash. */
    static List<?> of(Object reply, HashBinaryCommands redis, byte[] key, byte[] field) {
        if (!(reply instanceof Long)) {
            return (List<?>) reply;
        }
        byte[] claim = redis.hget(key, field);
        if (claim == null) {
            throw new AssertionError("granted token " + reply + " but no claim in our field");
        }
        long written = Long.parseLong(new String(claim, StandardCharsets.US_ASCII).split(" ", 2)[0]);
        return List.of(1L, reply, written);
    }

    /**
     * Today's acquire arguments for arguments in the layout of earlier builds (field, nonce, expiry, owner, guard,
     * scrub, check[, waiter, queue ms]): the nonce's counter without leading zeros instead of the nonce, and the key's
     * TTL after the check, the scrub flag and the check as one argument ("1off"), and the waiter's id and queue ms as
     * one, as RedisDriver sends them.
     */
    static List<String> todaysArgs(List<String> earlier) {
        List<String> out = new java.util.ArrayList<>(earlier);
        String nonce = out.get(1);
        if (nonce.length() == 32) {
            out.set(1, Long.toHexString(Long.parseUnsignedLong(nonce.substring(16), 16)));
        }
        out.add(7, new String(ScriptArgs.keyTtl(out.get(2).getBytes(StandardCharsets.US_ASCII)),
                StandardCharsets.US_ASCII));
        if (out.size() > 9) { // "<waiter id> <queue ms>", or "" for an acquire that does not wait
            String waiter = out.get(8);
            out.set(8, waiter.isEmpty() ? "" : waiter + " " + out.get(9));
            out.remove(9);
        }
        out.set(5, out.get(5) + out.remove(6)); // "<scrub><check>"
        return out;
    }
}
