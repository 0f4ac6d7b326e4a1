package dev.locker.api;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The forced-release record's stored form: the released claim's token as a trailer that earlier readers skip. */
class ForcedReleaseTest {

    private final LockOwner operator = new LockOwner("operator-1", "ops-host", 7, "main", "stuck", null);
    private final LockOwner holder = new LockOwner("worker-3", "w3", 4242, "job", "nightly", Instant.ofEpochMilli(5));
    private final Instant at = Instant.ofEpochMilli(1_795_000_000_000L);

    @Test
    void theReleasedTokenSurvivesTheStoredForm() {
        ForcedRelease r = ForcedRelease.fromBytes(new ForcedRelease(operator, "stuck", at, holder, 1795375826825303L)
                .toBytes());
        assertEquals(1795375826825303L, r.releasedToken().orElseThrow());
        assertEquals("worker-3", r.released().orElseThrow().rid());
        assertEquals("operator-1", r.by().rid());
        assertEquals("stuck", r.reason());
        assertEquals(at, r.at());
        assertTrue(r.toString().contains("token 1795375826825303"), r.toString());
    }

    @Test
    void aRecordWithoutTokenIsTheEarlierLayoutByteForByte() {
        byte[] now = new ForcedRelease(operator, "stuck", at, holder).toBytes();
        byte[] earlier = earlierLayout(operator, "stuck", at, holder);
        assertTrue(Arrays.equals(earlier, now), "unchanged for a record that knows no token");
        ForcedRelease r = ForcedRelease.fromBytes(earlier);
        assertFalse(r.releasedToken().isPresent());
        assertEquals("worker-3", r.released().orElseThrow().rid());
    }

    @Test
    void aReaderOfTheEarlierLayoutReadsANewRecordWhole() {
        // what the earlier reader did: the fields in order, nothing checked after them
        ByteBuffer buf = ByteBuffer.wrap(new ForcedRelease(operator, "stuck", at, holder, 99).toBytes());
        assertEquals(1, buf.get());
        assertEquals(at.toEpochMilli(), buf.getLong());
        byte[] reason = new byte[buf.getInt()];
        buf.get(reason);
        byte[] by = new byte[buf.getInt()];
        buf.get(by);
        byte[] released = new byte[buf.getInt()];
        buf.get(released);
        assertEquals("worker-3", LockOwner.fromBytes(released).rid());
        assertEquals(8, buf.remaining(), "only the trailer is left, which it never reads");
    }

    @Test
    void badTokensAndTrailersAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new ForcedRelease(operator, "", at, holder, -1));
        assertThrows(IllegalArgumentException.class, () -> new ForcedRelease(operator, "", at, null, 5));
        byte[] ok = new ForcedRelease(operator, "", at, holder, 5).toBytes();
        byte[] longer = Arrays.copyOf(ok, ok.length + 1);
        assertThrows(IllegalArgumentException.class, () -> ForcedRelease.fromBytes(longer));
        ForcedRelease free = ForcedRelease.fromBytes(new ForcedRelease(operator, "", at, null).toBytes());
        assertFalse(free.released().isPresent());
        assertFalse(free.releasedToken().isPresent());
    }

    /** The stored form as the build before the token wrote it. */
    private static byte[] earlierLayout(LockOwner by, String reason, Instant at, LockOwner released) {
        byte[] b = by.toBytes();
        byte[] r = reason.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] h = released == null ? new byte[0] : released.toBytes();
        return ByteBuffer.allocate(1 + 8 + 4 + r.length + 4 + b.length + 4 + h.length).put((byte) 1)
                .putLong(at.toEpochMilli()).putInt(r.length).put(r).putInt(b.length).put(b).putInt(h.length).put(h)
                .array();
    }
}
