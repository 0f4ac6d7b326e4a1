package dev.locker.engine;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ListCursorTest {

    @Test
    void fieldsRoundTripThroughAUrlSafeString() {
        byte[] binary = {0, (byte) 0xFF, '.', '/', '+', 'a'};
        String cursor = ListCursor.encode("ck1", binary, new byte[0]);
        assertTrue(cursor.matches("ck1\\.[A-Za-z0-9_-]*\\.[A-Za-z0-9_-]*"), cursor);
        byte[][] fields = ListCursor.decode(cursor, "ck1", 2);
        assertArrayEquals(binary, fields[0]);
        assertArrayEquals(new byte[0], fields[1]);
    }

    @Test
    void aCursorOfAnotherBackendOrShapeIsAnArgumentError() {
        String cursor = ListCursor.encode("mongo1", new byte[]{1});
        assertThrows(IllegalArgumentException.class, () -> ListCursor.decode(cursor, "ck1", 1), "another tag");
        assertThrows(IllegalArgumentException.class, () -> ListCursor.decode(cursor, "mongo1", 2), "another field count");
        assertThrows(IllegalArgumentException.class, () -> ListCursor.decode("mongo1.***", "mongo1", 1), "not base64url");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ListCursor.decode("garbage", "ck1", 1));
        assertTrue(e.getMessage().contains("garbage") && e.getMessage().contains("nextCursor"), e.getMessage());
        assertEquals(1, ListCursor.decode(cursor, "mongo1", 1)[0][0]);
    }
}
