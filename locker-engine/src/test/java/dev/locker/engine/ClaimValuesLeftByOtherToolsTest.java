package dev.locker.engine;

import dev.locker.api.LockOwner;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.Deadlines;
import dev.locker.spi.Entry;
import dev.locker.spi.StoreTransaction;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A claim whose bytes after the owner are not this build's two fields is judged by its expiry alone. */
class ClaimValuesLeftByOtherToolsTest extends JudgingScenario {

    /**
     * A tool wrote a claim with Long.MIN_VALUE after the owner, as LockOwner marks an unknown time. Its expiry passed
     * long ago, so B is granted the lock.
     */
    @Test
    void aDeadClaimWhoseTrailingTimeIsTheLeastLongIsJudgedDead() {
        ConsistentKeyDriver b = driver("b");
        byte[] tail = ByteBuffer.allocate(16).putLong(1).putLong(Long.MIN_VALUE).array();
        put(claimValue(clock.now().plus(EXPIRY), tail));
        clock.advance(EXPIRY.plusSeconds(1));
        ConsistentKeyClaim granted = b.verify(lock, b.write(lock, owner("b"), EXPIRY, null));
        assertNotNull(granted);
        assertTrue(b.readHolder(lock).isPresent(), "B holds the lock");
    }

    /**
     * A tool wrote a claim with 16 bytes of its own after the owner. Its expiry is 30 s on, so B is refused for its
     * validity, whatever those bytes say.
     */
    @Test
    void aClaimWithSixteenUnknownBytesAfterTheOwnerLivesUntilItsExpiry() {
        byte[] tail = new byte[16];
        Arrays.fill(tail, (byte) 0x5A);
        assertRefusedWhileHeld(tail);
    }

    /** The same with the 8-byte write number only, as the build before the last stored it: B is refused. */
    @Test
    void aClaimWithAWriteNumberAloneAfterTheOwnerLivesUntilItsExpiry() {
        assertRefusedWhileHeld(ByteBuffer.allocate(8).putLong(77).array());
    }

    private void assertRefusedWhileHeld(byte[] tail) {
        ConsistentKeyDriver b = driver("b");
        long started = clock.nanoTime();
        put(claimValue(clock.now().plus(EXPIRY), tail));
        long deadline = Deadlines.of(started, EXPIRY.minus(LOCK_WAIT));
        clock.advance(Duration.ofSeconds(10));
        ConsistentKeyClaim claim = b.write(lock, owner("b"), EXPIRY, null);
        ConsistentKeyClaim granted = null;
        try {
            granted = b.verify(lock, claim);
        } catch (TemporaryLockingException refused) {
            // the tool's claim holds: the answer this test wants
        }
        assertTrue(clock.nanoTime() - deadline < 0, "the tool's claim ran out");
        ConsistentKeyClaim grantedToB = granted;
        assertNull(grantedToB, () -> "B was granted token " + grantedToB.fencingToken()
                + " while the tool's claim, token 1, lives within its validity");
    }

    /** A claim as this format lays it out up to the owner, with token 1, then {@code tail}. */
    private byte[] claimValue(Instant expiry, byte[] tail) {
        byte[] o = owner("tool").withSince(clock.now()).toBytes();
        return ByteBuffer.allocate(17 + o.length + tail.length).put((byte) 1).putLong(ClaimCodec.micros(expiry))
                .putLong(1).put(o).put(tail).array();
    }

    private void put(byte[] value) {
        byte[] column = ClaimCodec.column(clock.now(), "tool", 1);
        StoreTransaction tx = shared.beginTransaction();
        shared.mutate(lock.encoded(), List.of(new Entry(column, value),
                new Entry(ClaimCodec.tokenColumn(1, column), new byte[0])), List.of(), tx);
        tx.commit();
    }
}
