package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.engine.ConsistentKeyLocker;
import dev.locker.engine.InMemoryStore;
import dev.locker.testkit.RedisServer;

import java.lang.management.ManagementFactory;
import java.time.Duration;

/**
 * Not a test: a one-JVM probe of the client heap per held lock (args: mem|redis N [pauseSeconds]). Holds N leases,
 * prints (heap after - heap before) / N, then waits so that a heap histogram can be taken.
 */
public final class HeapProbe {
    public static void main(String[] args) throws Exception {
        String which = args[0];
        int n = Integer.parseInt(args[1]);
        int pause = args.length > 2 ? Integer.parseInt(args[2]) : 0;
        LockerConfig config = LockerConfig.builder().expiry(Duration.ofMinutes(30)).lockWait(Duration.ofMillis(1)).build();
        RedisServer server = null;
        Locker locker;
        if (which.equals("redis")) {
            server = RedisServer.start();
            locker = RedisLocker.builder().node("127.0.0.1", server.port()).restartGuard(Duration.ZERO)
                    .config(config).build();
        } else {
            locker = ConsistentKeyLocker.builder(new InMemoryStore("probe")).config(config).build();
        }
        for (int i = 0; i < 2_000; i++) { // warm: keep-alive threads, mediator table, scripts
            locker.acquire(KeyColumn.named("warm-" + (i % 8)), "bench").close();
        }
        Lease[] kept = new Lease[n];
        KeyColumn[] keys = new KeyColumn[n];
        for (int i = 0; i < n; i++) {
            keys[i] = KeyColumn.named("held-" + i);
        }
        long before = used();
        java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger();
        Thread[] ts = new Thread[which.equals("redis") ? 4 : 64];
        for (int t = 0; t < ts.length; t++) {
            ts[t] = new Thread(() -> {
                for (int i; (i = next.getAndIncrement()) < n; ) {
                    while (kept[i] == null) {
                        try {
                            kept[i] = locker.acquire(keys[i], "bench");
                        } catch (dev.locker.api.TemporaryLockingException e) {
                            // mem: with a 1 ms lock-wait under load: try again
                        }
                    }
                }
            });
            ts[t].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        ts = null;
        long after = used();
        System.out.printf("RESULT %s n=%d heap/lock=%.1f B (keys excluded)%n", which, n, (after - before) / (double) n);
        System.out.println("PID " + ProcessHandle.current().pid());
        System.out.flush();
        Thread.sleep(pause * 1000L);
        if (kept[n - 1] == null || keys[0] == null) {
            throw new IllegalStateException();
        }
        Runtime.getRuntime().halt(0);
    }

    private static long used() throws InterruptedException {
        for (int i = 0; i < 4; i++) {
            System.gc();
            Thread.sleep(200);
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
