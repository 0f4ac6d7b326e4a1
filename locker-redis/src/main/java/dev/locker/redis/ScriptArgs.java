package dev.locker.redis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;

/**
 * Script arguments the client computes, as ASCII digits, so that the scripts' fast paths need no library call (see
 * acquire.lua and release.lua). Those made per pair are one array each, written in place: a pair's allocation is a
 * published row.
 */
final class ScriptArgs {

    private ScriptArgs() {
    }

    /**
     * A duration in whole milliseconds, rounded up: the scripts keep claims, the restart guard, tombstones and queue
     * entries for whole milliseconds, and none may end before the duration the client counts with (a claim rounded
     * down lapsed on the server while its holder's lease was still valid: an expiry of 1.9 ms was written as 1 ms, one
     * under a millisecond as 0).
     */
    static byte[] millis(Duration d) {
        long ms = d.toMillis(); // rounded down (toward the past for a negative one)
        if (d.compareTo(Duration.ofMillis(ms)) > 0) {
            ms++;
        }
        return Long.toString(Math.max(0, ms)).getBytes(StandardCharsets.US_ASCII);
    }

    /** The nonce's counter without leading zeros: ARGV 2 of the acquire script, as the claim's value carries it. */
    static byte[] counter(byte[] nonce) {
        return Arrays.copyOfRange(nonce, counterStart(nonce), nonce.length);
    }

    /**
     * The safety-net TTL of a lock's key at a grant with expiry {@code expiryMs}: one expiry after the claim's, as
     * acquire.lua's keep_until sets it ({@code 2 * expiry + 1} ms). Capped at 2^53 as the prelude's fmt caps numbers:
     * a PEXPIRE past 2^63 written negative would delete the key of the lock just granted.
     */
    static byte[] keyTtl(byte[] expiryMs) {
        long ms = Long.parseLong(new String(expiryMs, StandardCharsets.US_ASCII));
        long ttl = Math.min(1L << 53, ms > (Long.MAX_VALUE - 1) / 2 ? Long.MAX_VALUE : 2 * ms + 1);
        return Long.toString(ttl).getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * How the value of our claim starts while it is as granted (written at its token, the usual grant) and unrenewed:
     * {@code "<token> <expiry ms> 0 <counter> "}, with the last expiry this driver wrote a claim with. The release
     * script compares it with one plain find; a claim renewed, granted with another expiry or with a token above its
     * written time does not match, and is released by the script's parse as before.
     */
    static byte[] grantedStart(long token, byte[] expiryMs, byte[] nonce) {
        int from = counterStart(nonce);
        int digits = digits(token);
        byte[] out = new byte[digits + expiryMs.length + nonce.length - from + 5];
        int p = putDigits(out, 0, token, digits);
        out[p++] = ' ';
        System.arraycopy(expiryMs, 0, out, p, expiryMs.length);
        p += expiryMs.length;
        out[p++] = ' ';
        out[p++] = '0';
        out[p++] = ' ';
        System.arraycopy(nonce, from, out, p, nonce.length - from);
        out[out.length - 1] = ' ';
        return out;
    }

    /** The released claim our claim becomes: {@code "0 0 <token> <counter> "} (see the prelude of the scripts). */
    static byte[] releasedValue(long token, byte[] nonce) {
        int from = counterStart(nonce);
        int digits = digits(token);
        byte[] out = new byte[digits + nonce.length - from + 6];
        out[0] = '0';
        out[1] = ' ';
        out[2] = '0';
        out[3] = ' ';
        int p = putDigits(out, 4, token, digits);
        out[p++] = ' ';
        System.arraycopy(nonce, from, out, p, nonce.length - from);
        out[out.length - 1] = ' ';
        return out;
    }

    /** Where the nonce's counter (its last 16 hex digits) starts without leading zeros, as a claim's value has it. */
    static int counterStart(byte[] nonce) {
        int i = nonce.length - 16;
        while (i < nonce.length - 1 && nonce[i] == '0') {
            i++;
        }
        return i;
    }

    /** The number of decimal digits of {@code n}, at least 0 (tokens are). */
    private static int digits(long n) {
        int d = 1;
        for (long x = n; x >= 10; x /= 10) {
            d++;
        }
        return d;
    }

    /** Writes {@code n}'s {@code digits} decimal digits at {@code at}; returns the index after them. */
    private static int putDigits(byte[] out, int at, long n, int digits) {
        long x = n;
        for (int i = at + digits - 1; i >= at; i--) {
            out[i] = (byte) ('0' + x % 10);
            x /= 10;
        }
        return at + digits;
    }
}
