package dev.locker.api;

import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

/** A configuration's reused owner follows the thread's name and the reason, and callers cannot change its bytes. */
class LockOwnerReuseTest {

    @Test
    void aReusedOwnerFollowsTheThreadsNameAndTheReasonAndItsBytesCannotBeChangedByACaller() throws Exception {
        LockerConfig config = LockerConfig.builder().rid("r").why("default").build();
        Thread me = Thread.currentThread();
        String name = me.getName();
        try {
            me.setName("before");
            LockOwner a = config.owner("job");
            assertSame(a, config.owner("job"));
            assertEquals("default", config.owner(null).why());
            assertEquals("job", config.owner("job").why());
            me.setName("after");
            assertEquals("after", config.owner("job").thread());
            byte[] bytes = config.owner("job").toBytes();
            Arrays.fill(bytes, (byte) 0x7f);
            assertEquals("after", LockOwner.fromBytes(config.owner("job").toBytes()).thread());
            String[] other = new String[1];
            Thread t = new Thread(() -> other[0] = config.owner("job").thread(), "other");
            t.start();
            t.join();
            assertEquals("other", other[0]);
        } finally {
            me.setName(name);
        }
    }
}
