package dev.locker.engine;

import dev.locker.api.LockOwner;
import dev.locker.api.LockerConfig;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a claim's stored value carries, and what readers of this and earlier builds make of it. */
class ClaimValueTest {

    private static final Instant WRITTEN = Instant.parse("2026-11-29T08:00:00Z");
    private static final LockOwner OWNER = LockerConfig.builder().rid("w").build().owner("t").withSince(WRITTEN);
    private static final byte[] COLUMN = ClaimCodec.column(WRITTEN, "w", 7);

    @Test
    void twoWritesOfOneClaimWithOneExpiryStoreDifferentValues() {
        Instant expiry = Instant.parse("2026-11-29T08:00:30Z");
        byte[] first = ClaimCodec.value(expiry, 3, OWNER, WRITTEN);
        byte[] again = ClaimCodec.value(expiry, 3, OWNER, WRITTEN);
        assertFalse(Arrays.equals(first, again), "a rewrite with the same expiry stored the same value");
        assertEquals(ClaimCodec.decode(COLUMN, first).expiry, ClaimCodec.decode(COLUMN, again).expiry);
    }

    @Test
    void aValueReadsAsTheClaimItEncodesWithTheTimeItsExpiryWasCountedFrom() {
        Instant expiry = Instant.parse("2026-11-29T08:00:40.000001Z");
        Instant renewed = Instant.parse("2026-11-29T08:00:10.000001Z");
        ClaimCodec.Claim c = ClaimCodec.decode(COLUMN, ClaimCodec.value(expiry, 42, OWNER, renewed));
        assertEquals(expiry, c.expiry);
        assertEquals(42, c.token);
        assertEquals(OWNER, c.owner);
        assertEquals("w", c.rid);
        assertEquals(WRITTEN, c.writtenAt, "the column's time stays the claim's seniority");
        assertEquals(renewed, c.expiryFrom);
        assertTrue(c.numbered);
    }

    @Test
    void aValueOfAnEarlierBuildReadsWithItsExpiryCountedFromTheColumnsTime() {
        Instant expiry = Instant.parse("2026-11-29T08:00:30Z");
        byte[] o = OWNER.toBytes();
        byte[] earlier = ByteBuffer.allocate(17 + o.length).put((byte) 1).putLong(ClaimCodec.micros(expiry))
                .putLong(5).put(o).array();
        ClaimCodec.Claim c = ClaimCodec.decode(COLUMN, earlier);
        assertEquals(expiry, c.expiry);
        assertEquals(5, c.token);
        assertEquals(OWNER, c.owner);
        assertEquals(WRITTEN, c.expiryFrom);
        assertFalse(c.numbered, "a value without a write number may repeat another write of its claim");
    }

    @Test
    void anEarlierBuildReadsTheOwnerOfAValueWithTheFieldsAfterIt() {
        // earlier builds decode the owner from byte 17 to the end, with LockOwner.fromBytes
        byte[] v = ClaimCodec.value(Instant.parse("2026-11-29T08:00:30Z"), 5, OWNER, WRITTEN);
        assertEquals(OWNER, LockOwner.fromBytes(Arrays.copyOfRange(v, 17, v.length)));
    }
}
