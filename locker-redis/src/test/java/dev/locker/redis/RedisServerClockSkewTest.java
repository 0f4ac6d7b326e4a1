package dev.locker.redis;

import dev.locker.api.ExpiredLockException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockTransaction;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.spi.DeploymentCheck;
import dev.locker.testkit.RedisServer;
import dev.locker.testkit.VirtualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A holder's validity allows for {@code serverClockSkew}, and the doctor fails servers whose clocks differ more. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisServerClockSkewTest {

    /** Shifts CLOCK_REALTIME and gettimeofday by CLOCK_SHIFT_MS, through raw syscalls (no dlsym at start-up). */
    private static final String SHIFT_C = String.join("\n",
            "#define _GNU_SOURCE",
            "#include <time.h>",
            "#include <sys/time.h>",
            "#include <sys/syscall.h>",
            "#include <unistd.h>",
            "#include <stdlib.h>",
            "static long long shift_ns(void) { const char *s = getenv(\"CLOCK_SHIFT_MS\");"
                    + " return s ? atoll(s) * 1000000LL : 0; }",
            "int clock_gettime(clockid_t id, struct timespec *ts) {",
            "  int r = (int) syscall(SYS_clock_gettime, id, ts);",
            "  if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {",
            "    long long ns = (long long) ts->tv_sec * 1000000000LL + ts->tv_nsec + shift_ns();",
            "    ts->tv_sec = ns / 1000000000LL; ts->tv_nsec = ns % 1000000000LL;",
            "  }",
            "  return r;",
            "}",
            "int gettimeofday(struct timeval *tv, void *tz) {",
            "  struct timespec ts; (void) tz;",
            "  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;",
            "  tv->tv_sec = ts.tv_sec; tv->tv_usec = ts.tv_nsec / 1000;",
            "  return 0;",
            "}",
            "");

    private static final String REDIS_SERVER = System.getenv().getOrDefault("REDIS_SERVER", "/usr/bin/redis-server");

    private final List<Locker> opened = new ArrayList<>();

    @BeforeEach
    void needsOwnServers() {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "needs servers of its own");
    }

    @AfterEach
    void closeLockers() {
        opened.forEach(Locker::close);
        opened.clear();
    }

    /**
     * Given a 10 s expiry and serverClockSkew=2s: past 8 s on the holder's clock its claim no longer counts, since a
     * promoted replica 2 s ahead would end it then.
     */
    @Test
    void aHoldersValidityIsTheExpiryLessTheServerClockSkew() {
        try (RedisServer server = RedisServer.start()) {
            VirtualClock clock = new VirtualClock(Instant.now());
            RedisLocker a = RedisLocker.builder().node("127.0.0.1", server.port()).keyPrefix("skew:")
                    .config(LockerConfig.builder().expiry(Duration.ofSeconds(10)).timeSource(clock).build())
                    .restartGuard(Duration.ZERO).serverClockSkew(Duration.ofSeconds(2)).build();
            opened.add(a);
            KeyColumn lock = KeyColumn.named("skewed");
            LockTransaction tx = new LockTransaction("holder");
            a.writeLock(lock, tx);
            a.checkLocks(tx);
            clock.advance(Duration.ofMillis(8_001));
            assertThrows(ExpiredLockException.class, () -> a.checkLocks(tx),
                    "valid past the expiry less the skew");
        }
    }

    /** A bound the expiry cannot carry is refused before any I/O. */
    @Test
    void aSkewOfHalfTheExpiryOrMoreIsRefusedWhenBuilt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RedisLocker.builder()
                .uri("redis://127.0.0.1:1?expiry=4s&serverClockSkew=2s").build());
        assertTrue(e.getMessage().contains("serverClockSkew"), e.getMessage());
    }

    /**
     * Given a master and a replica whose wall clock runs 3 s ahead (LD_PRELOAD): the doctor fails the clocks under
     * serverClockSkew=1s and passes them under 5s.
     */
    @Test
    void theDoctorFailsAReplicaWhoseClockIsFurtherOffThanTheBound() throws Exception {
        Path dir = Files.createTempDirectory("clock-shift");
        Path source = dir.resolve("shift.c");
        Path lib = dir.resolve("libshift.so");
        Files.writeString(source, SHIFT_C, StandardCharsets.US_ASCII);
        Process gcc = new ProcessBuilder("gcc", "-shared", "-fPIC", "-O2", "-o", lib.toString(), source.toString())
                .redirectErrorStream(true).start();
        String gccOut = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        Assumptions.assumeTrue(gcc.waitFor() == 0, "gcc could not build the clock shim: " + gccOut);
        try (RedisServer master = RedisServer.start()) {
            int port = RedisServer.freePort(false);
            ProcessBuilder pb = new ProcessBuilder(REDIS_SERVER, "--port", Integer.toString(port),
                    "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.toString(),
                    "--replicaof", "127.0.0.1", Integer.toString(master.port()))
                    .redirectErrorStream(true).redirectOutput(dir.resolve("replica.log").toFile());
            pb.environment().put("LD_PRELOAD", lib.toString());
            pb.environment().put("CLOCK_SHIFT_MS", "3000");
            Process replica = pb.start();
            try {
                while (!master.cli("INFO", "replication").contains("connected_slaves:1")) {
                    assertTrue(replica.isAlive(), () -> "the shifted replica died: " + log(dir));
                    RedisServer.sleep(50);
                }
                DeploymentCheck.Finding tight = clocks(master.address() + "?expiry=30s&serverClockSkew=1s");
                assertEquals(DeploymentCheck.Level.FAIL, tight.level(), tight::toString);
                DeploymentCheck.Finding loose = clocks(master.address() + "?expiry=30s&serverClockSkew=5s");
                assertEquals(DeploymentCheck.Level.OK, loose.level(), loose::toString);
            } finally {
                replica.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    private static DeploymentCheck.Finding clocks(String uri) {
        for (DeploymentCheck.Finding f : new RedisDoctor().check(uri, p -> { })) {
            if (f.check().equals("server-clocks")) {
                return f;
            }
        }
        throw new AssertionError("no server-clocks finding for " + uri);
    }

    private static String log(Path dir) {
        try {
            return Files.readString(dir.resolve("replica.log"));
        } catch (IOException e) {
            return e.toString();
        }
    }
}
