package dev.locker.faults;

import dev.locker.api.Acquisition;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * One contender, in a JVM of its own: opens a locker on the backend URI, waits for the harness's {@code GO}, then
 * cycles: ask for a lock ({@code acquireWithin}), write to the referee with the fencing token while the lease is
 * valid, release. Every step is one {@link Event} line on stdout, stamped with {@link System#nanoTime()} (shared with
 * every JVM of the host; libfaketime leaves it alone with {@code FAKETIME_DONT_FAKE_MONOTONIC=1}). A sampler thread
 * records the lease's validity deadline whenever it moves (a renewal), so the checkers know until when this worker
 * believed it held the lock.
 *
 * <p>Arguments ({@code --name=value}): {@code id}, {@code uri}, {@code locks} (comma-separated names), {@code referee}
 * (port), {@code cycles}, {@code holdMs}, {@code writes} (per hold), {@code waitMs} (per acquire), {@code gapMs}
 * (between cycles), {@code releasePauseMs} (sleep inside the release step, so the harness can kill it there),
 * {@code keepAlive} (true/false), {@code seed}, {@code closeInterruptedAndQuit} (true: close the first lease with the
 * thread's interrupt flag set, then contend no more). A write is guarded by {@link Lease#remaining()} alone, which
 * reads the local monotonic clock: no server round trip stands between the validity check and the write, so a guard
 * turned off in the locker shows as an overlap or a stale write. Standard input: {@code GO <untilNanos>} starts it, {@code STOP} ends
 * it after the current cycle; end of input (the harness died) halts it at once.
 *
 * <h2>Serving several runs</h2>
 * Started with {@code --serve} alone, the JVM serves one run after another of the same backend.
 * Each run arrives as a line {@code RUN} followed by its tab-separated arguments, and gets a new worker and locker.
 * After its {@code EXIT} event the JVM prints {@code IDLE} once the run left no thread behind, and waits for the next.
 * Otherwise it prints {@code UNFIT} with the reason and exits, so that no run inherits another's state.
 */
public final class Worker {

    /** Standard output, where the events go: one stream for every run of the JVM, so lines never interleave. */
    private static final PrintStream OUT = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out),
            true, StandardCharsets.UTF_8);
    /** How long a served run's threads (keep-alive, client pools) may take to end after its locker closed. */
    private static final long THREADS_END_WITHIN_MS = 3_000;

    /**
     * Name prefixes of the threads that clients start once per JVM and share: Redis's owner-record writer, MongoDB's
     * buffer pool pruner, the HBase RPC client's event loops and timers, Hadoop's file system statistics cleaner, and
     * the JDK's process reaper.
     */
    private static final List<String> SHARED_THREADS = List.of("locker-redis-owner-records", "BufferPoolPruner",
            "RPCClient-NioEventLoopGroup", "RpcClient-timer", "Idle-Rpc-Conn-Sweeper", "Async-Client-Retry-Timer",
            "org.apache.hadoop.fs.FileSystem$Statistics$StatisticsDataReferenceCleaner", "process reaper");

    private final Map<String, String> args;
    private final String id;
    private final PrintStream out = OUT;
    private final Commands commands;
    private volatile Lease current;
    private volatile String currentLock;
    private volatile long lastDeadline;
    private volatile boolean stopped;
    private volatile boolean over;

    private Worker(Map<String, String> args, Commands commands) {
        this.args = args;
        this.id = arg("id");
        this.commands = commands;
    }

    /**
     * Runs one worker until its cycles are done or the harness's deadline passed.
     *
     * @param argv {@code --name=value} arguments (see the class comment)
     * @throws Exception when the worker cannot run at all
     */
    public static void main(String[] argv) throws Exception {
        Commands commands = new Commands();
        if (argv.length == 1 && argv[0].equals("--serve")) {
            serve(commands);
            return;
        }
        Map<String, String> args = parse(argv);
        commands.start();
        Worker worker = new Worker(args, commands);
        commands.current = worker;
        worker.run();
        System.exit(0);
    }

    private static Map<String, String> parse(String[] argv) {
        Map<String, String> args = new HashMap<>();
        for (String a : argv) {
            int eq = a.indexOf('=');
            if (!a.startsWith("--") || eq < 0) {
                throw new IllegalArgumentException("arguments are --name=value, got: " + a);
            }
            args.put(a.substring(2, eq), a.substring(eq + 1));
        }
        return args;
    }

    /**
     * Serves runs until the harness closes standard input, each with a worker and a locker of its own.
     * The threads alive before the first run are the baseline: a run must leave no other thread behind.
     */
    private static void serve(Commands commands) throws Exception {
        commands.start();
        Set<Thread> baseline = Set.copyOf(Thread.getAllStackTraces().keySet());
        while (true) {
            String line = commands.next();
            if (!line.startsWith("RUN\t")) {
                Runtime.getRuntime().halt(3);
            }
            Worker worker = new Worker(parse(line.substring(4).split("\t")), commands);
            commands.current = worker;
            worker.run();
            commands.current = null;
            String unfit = Boolean.parseBoolean(worker.args.getOrDefault("closeInterruptedAndQuit", "false"))
                    ? "its lease was closed on an interrupted thread" : threadsLeftBehind(baseline);
            if (unfit != null) {
                OUT.println("UNFIT " + unfit);
                System.exit(0);
            }
            OUT.println("IDLE");
        }
    }

    /**
     * Whether {@code t} is a thread its library starts once per JVM, from a static field, for every client.
     * Such a thread outlives each client by design and holds no connection of a closed one.
     */
    private static boolean isSharedByTheJvm(Thread t) {
        return SHARED_THREADS.stream().anyMatch(t.getName()::startsWith);
    }

    /** The threads a run left behind, once they had a moment to end, or null when there are none. */
    private static String threadsLeftBehind(Set<Thread> baseline) throws InterruptedException {
        long end = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(THREADS_END_WITHIN_MS);
        while (true) {
            List<String> left = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.isAlive() && !baseline.contains(t) && !isSharedByTheJvm(t))
                    .map(Thread::getName).sorted().toList();
            if (left.isEmpty()) {
                return null;
            }
            if (System.nanoTime() - end >= 0) {
                return "threads left behind: " + left;
            }
            Thread.sleep(20);
        }
    }

    private String arg(String name) {
        String v = args.get(name);
        if (v == null) {
            throw new IllegalArgumentException("missing argument --" + name + "=...");
        }
        return v;
    }

    private long num(String name, long dflt) {
        String v = args.get(name);
        return v == null ? dflt : Long.parseLong(v);
    }

    private synchronized void emit(Event.Type type, String lock, long token, long deadline, String detail) {
        out.println(new Event(System.nanoTime(), id, type, lock, token, deadline, detail).toLine());
    }

    private void run() throws Exception {
        List<String> locks = List.of(arg("locks").split(","));
        long cycles = num("cycles", Long.MAX_VALUE);
        long holdMs = num("holdMs", 100);
        int writes = (int) Math.max(1, num("writes", 3));
        Duration wait = Duration.ofMillis(num("waitMs", 5000));
        long gapMs = num("gapMs", 10);
        long releasePauseMs = num("releasePauseMs", 0);
        boolean keepAlive = Boolean.parseBoolean(args.getOrDefault("keepAlive", "true"));
        boolean closeInterrupted = Boolean.parseBoolean(args.getOrDefault("closeInterruptedAndQuit", "false"));
        Random random = new Random(num("seed", 1));

        LockProbe probe = new LockProbe() {
            @Override
            public void before(Step step, KeyColumn lock, String rid) {
                if (step == Step.RELEASE) {
                    emit(Event.Type.RELEASE_STEP, currentLock, 0, 0, "release step begins");
                    if (releasePauseMs > 0) {
                        sleep(releasePauseMs);
                    }
                }
            }

            @Override
            public void after(Step step, KeyColumn lock, String rid, RuntimeException failure) {
                if (step == Step.RENEW) {
                    if (failure != null) {
                        emit(Event.Type.NOTE, currentLock, 0, 0, "renewal failed: " + failure);
                    }
                    sampleDeadline();
                }
            }
        };
        LockerConfig config = LockerConfig.builder().rid("faults-" + id).probe(probe).build();
        try (Locker locker = openPatiently(arg("uri"), config);
             Socket referee = new Socket(InetAddress.getLoopbackAddress(), Integer.parseInt(arg("referee")))) {
            referee.setTcpNoDelay(true);
            BufferedReader refereeIn = new BufferedReader(new InputStreamReader(referee.getInputStream(), StandardCharsets.UTF_8));
            OutputStream refereeOut = referee.getOutputStream();
            emit(Event.Type.READY, "-", 0, 0, "rid " + locker.rid() + ", pid " + ProcessHandle.current().pid());
            long until = awaitGo();
            Thread sampler = daemon("deadline-sampler", () -> {
                while (!over) {
                    sampleDeadline();
                    sleep(5);
                }
            });
            try {
                for (long cycle = 0; cycle < cycles && !stopped && System.nanoTime() - until < 0; cycle++) {
                    String name = locks.get(random.nextInt(locks.size()));
                    emit(Event.Type.ACQUIRE, name, 0, 0, "cycle " + cycle);
                    Acquisition a = locker.acquireWithin(KeyColumn.named(name), "faults worker " + id, wait);
                    if (!a.acquired()) {
                        emit(Event.Type.REFUSED, name, 0, 0, a.toString());
                        sleep(gapMs);
                        continue;
                    }
                    Lease lease = a.lease().orElseThrow();
                    long token = lease.fencingToken();
                    lastDeadline = deadlineOf(lease);
                    emit(Event.Type.GRANTED, name, token, lastDeadline, "cycle " + cycle);
                    currentLock = name;
                    current = lease;
                    lease.onLost(loss -> emit(Event.Type.LOST, name, token, 0, loss.reason() + " " + loss));
                    if (!keepAlive) {
                        lease.keepAlive(false);
                    }
                    for (int w = 0; w < writes && !stopped; w++) {
                        long deadline = deadlineOf(lease);
                        if (deadline == 0) {
                            emit(Event.Type.INVALID, name, token, 0, "lease no longer valid: stop writing");
                            break;
                        }
                        emit(Event.Type.WRITE, name, token, deadline, "write " + w);
                        refereeOut.write(("W " + id + " " + name + " " + token + " " + deadline + "\n")
                                .getBytes(StandardCharsets.UTF_8));
                        refereeOut.flush();
                        String reply = refereeIn.readLine();
                        if ("OK".equals(reply)) {
                            emit(Event.Type.WRITE_OK, name, token, deadline, "");
                        } else {
                            emit(Event.Type.WRITE_REFUSED, name, token, deadline, String.valueOf(reply));
                        }
                        if (holdMs > 0) {
                            sleep(holdMs / writes);
                        }
                    }
                    emit(Event.Type.RELEASE, name, token, deadlineOf(lease), "");
                    current = null;
                    if (closeInterrupted) {
                        closeInterruptedAndQuit(lease, name, token);
                        break;
                    }
                    lease.close();
                    emit(Event.Type.RELEASED, name, token, 0, "");
                    if (gapMs > 0) {
                        sleep(gapMs);
                    }
                }
            } finally {
                over = true;
                sampler.join();
            }
        }
        emit(Event.Type.EXIT, "-", 0, 0, "done");
        out.flush();
    }

    /**
     * Closes the lease with this thread's interrupt flag set, then contends no more but stays up until STOP. The JVM
     * stays alive on purpose: on file: its exit would drop the kernel's locks and hide a claim the close left behind.
     */
    private void closeInterruptedAndQuit(Lease lease, String name, long token) {
        Thread.currentThread().interrupt();
        try {
            lease.close();
        } catch (RuntimeException e) {
            emit(Event.Type.NOTE, name, token, 0, "close on an interrupted thread failed: " + e);
        }
        boolean flag = Thread.interrupted();
        emit(Event.Type.RELEASED, name, token, 0, "closed on an interrupted thread (flag kept: " + flag + "); quits");
        while (!stopped) {
            sleep(20);
        }
    }

    /**
     * The lease's deadline on this host's monotonic clock, or 0 when it is no longer valid. The clock is read BEFORE
     * the lease's remaining time, so a pause between the two (this process SIGSTOPped, as STOP_HOLDER does) can only
     * make the reported deadline earlier than the lease's. Read the other way round, a remaining time sampled just
     * before a SIGSTOP was added to a clock read after the SIGCONT: a deadline as far past the real one as the pause
     * was long, which the checker rightly counted as an overlap of valid leases (TortureTest, SIGSTOP holder on
     * MongoDB, seed 3318227618686223981: the deadline sampler reported a ~0.9 s validity right after the SIGCONT while
     * the lease itself had expired and another worker held the lock; the lease was found lost 8 ms later).
     */
    static long deadlineOf(Lease lease) {
        return deadlineOf(lease, System::nanoTime);
    }

    /** As {@link #deadlineOf(Lease)}, on {@code clock} (the lease's own clock: a test gives a virtual one). */
    static long deadlineOf(Lease lease, java.util.function.LongSupplier clock) {
        long now = clock.getAsLong();
        long remaining = lease.remaining().toNanos();
        return remaining > 0 ? now + remaining : 0;
    }

    /** Records the current lease's deadline when it moved (a renewal extended it). */
    private void sampleDeadline() {
        Lease lease = current;
        if (lease == null) {
            return;
        }
        long deadline = deadlineOf(lease);
        if (deadline == 0) {
            return;
        }
        if (deadline - lastDeadline > 2_000_000) {
            lastDeadline = deadline;
            emit(Event.Type.DEADLINE, currentLock, 0, deadline, "");
        }
    }

    private long awaitGo() throws InterruptedException {
        String line = commands.next();
        if (!line.startsWith("GO ")) {
            Runtime.getRuntime().halt(3);
        }
        return Long.parseLong(line.substring(3).trim());
    }

    /**
     * The harness's lines on standard input, read by one thread for the JVM's whole life.
     * {@code STOP} reaches the current worker at once; every other line waits in order for the worker to take it.
     */
    private static final class Commands {
        private final java.util.concurrent.BlockingQueue<String> lines = new java.util.concurrent.LinkedBlockingQueue<>();
        private volatile Worker current;

        void start() {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            daemon("stdin-watch", () -> {
                try {
                    String next;
                    while ((next = in.readLine()) != null) {
                        Worker w = current;
                        if (next.trim().equals("STOP")) {
                            if (w != null) {
                                w.stopped = true; // finish this cycle, then exit
                            }
                        } else {
                            lines.add(next);
                        }
                    }
                } catch (IOException ignored) {
                    // same as end of input
                }
                Runtime.getRuntime().halt(3);
            });
        }

        String next() throws InterruptedException {
            return lines.take();
        }
    }

    private static Thread daemon(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Opens the locker, again while the backend answers "not now": a worker started on a busy machine may find the
     * server slow to open (HBase creates or finds its table). The run's faults start after every worker is READY.
     */
    private static Locker openPatiently(String uri, LockerConfig config) {
        long end = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try {
                return Lockers.open(uri, config);
            } catch (dev.locker.api.TemporaryLockingException e) {
                if (System.nanoTime() - end >= 0) {
                    throw e;
                }
                System.err.println("opening the locker failed for now, again in 1 s: " + e.getMessage());
                sleep(1_000);
            }
        }
    }
}
