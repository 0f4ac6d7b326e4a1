package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.TemporaryLockingException;
import dev.locker.engine.ClaimStatus;
import dev.locker.spi.LockRecords;
import redis.clients.jedis.args.Rawable;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

/**
 * The records kept with each lock, in a hash of their own beside the lock's ({@link RedisKeys#recordKey}), all
 * through record.lua. A record written under a claim is checked against that claim in the same script.
 */
final class RedisRecords implements LockRecords<ClaimStatus> {

    private final RedisKeys keys;
    private final RedisCalls calls;
    /** The driver's claim field in every lock's hash, as the scripts get it. */
    private final Rawable fieldArg;

    RedisRecords(RedisKeys keys, RedisCalls calls, Rawable fieldArg) {
        this.keys = keys;
        this.calls = calls;
        this.fieldArg = fieldArg;
    }

    @Override
    public Optional<byte[]> readRecord(KeyColumn lock, String name) {
        List<byte[]> keyList = List.of(keys.lockKey(lock), keys.recordKey(lock));
        List<byte[]> args = List.of(new byte[]{'r'}, name.getBytes(StandardCharsets.US_ASCII));
        Object r = calls.withRetries(() -> RedisScript.RECORD.run(calls.client(), keyList, args));
        return r instanceof byte[] ? Optional.of((byte[]) r) : Optional.empty();
    }

    @Override
    public void putRecord(KeyColumn lock, String name, byte[] value) {
        List<byte[]> keyList = List.of(keys.lockKey(lock), keys.recordKey(lock));
        List<byte[]> args = List.of(new byte[]{'f'}, name.getBytes(StandardCharsets.US_ASCII), value);
        calls.withRetries(() -> RedisScript.RECORD.run(calls.client(), keyList, args));
    }

    /**
     * Atomic with the check that our claim (field, nonce, token) is alive: one script. With {@code replicas > 0} the
     * record counts only once that many replicas acknowledged it, like the claim it follows: otherwise a failover to
     * a replica that has the claim but not the record would run the job again after a run reported done.
     */
    @Override
    public boolean writeRecord(KeyColumn lock, String name, byte[] value, ClaimStatus holding) {
        Rawable[] call = {RedisScript.arg(keys.lockKey(lock)), RedisScript.arg(keys.recordKey(lock)),
                RedisScript.arg(new byte[]{'w'}), RedisScript.arg(name.getBytes(StandardCharsets.US_ASCII)),
                RedisScript.arg(value), fieldArg, RedisScript.arg(holding.claimId()),
                RedisScript.arg(Long.toString(holding.fencingToken()).getBytes(StandardCharsets.US_ASCII))};
        if (calls.replicas == 0) {
            return (Long) calls.withRetries(() -> RedisScript.RECORD.run(calls.client(), 2, call)) == 1L;
        }
        Object[] both = calls.withRetries(() -> calls.runAndWait(RedisScript.RECORD, 2, call));
        long acks = (Long) both[1];
        if ((Long) both[0] == 1L && acks < calls.replicas) {
            throw new TemporaryLockingException("the run's record was written on " + calls.server() + " but only "
                    + acks + " of " + calls.replicas + " replicas acknowledged it within " + calls.replicaTimeout
                    + ": a failover may lose it, and the job then runs again", lock);
        }
        return (Long) both[0] == 1L;
    }
}
