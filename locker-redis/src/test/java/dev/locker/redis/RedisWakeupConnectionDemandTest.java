package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockerConfig;
import dev.locker.testkit.RedisServer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** A locker asks the server for its wake-up connection only once a wait finds its lock held by someone. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisWakeupConnectionDemandTest {

    /**
     * Given a server at its {@code maxclients} (its one slot held by another client), a wait is refused for want of
     * a connection, never because the lock is held. No release can come, so the locker opens no wake-up connection:
     * its subscriber never tries, and never pauses to try again.
     */
    @Test
    void aWaitRefusedByAFullServerAsksItForNoWakeupConnection() throws Exception {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs a server it can start with maxclients 1");
        try (RedisServer s = RedisServer.start("--maxclients", "1");
             Socket hog = occupyTheOnlySlot(s)) {
            KeyColumn lock = KeyColumn.named("full-" + LockerConfig.randomRid().substring(0, 8));
            try (RedisLocker l = RedisLocker.builder().node("127.0.0.1", s.port()).keyPrefix("demand:")
                    .config(LockerConfig.builder().expiry(Duration.ofSeconds(5)).build())
                    .restartGuard(Duration.ZERO).build()) {
                assertEquals(Optional.empty(), l.tryAcquire(lock, "server full", Duration.ofSeconds(1)));
                assertEquals(0, l.wakeupReconnectPauseMillis(),
                        "the wake-up connection was tried on a server refusing clients, with no holder to wait for");
                assertEquals(0, l.wakeupSubscriptions());
            }
        }
    }

    /** Holds the server's only client slot: a raw connection that the server has accepted (it answered PING). */
    private static Socket occupyTheOnlySlot(RedisServer s) throws IOException {
        while (true) {
            Socket socket = new Socket(InetAddress.getLoopbackAddress(), s.port());
            socket.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            String reply = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII))
                    .readLine();
            if ("+PONG".equals(reply)) {
                return socket;
            }
            socket.close(); // the server had not yet noticed that an earlier client (the start-up PING) left
            RedisServer.sleep(20);
        }
    }
}
