package dev.locker.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP proxy in front of a redis-server that can make either direction late, on the connections open at the moment
 * it is told to (connections opened afterwards pass freely):
 * <ul>
 *   <li>{@link #stallRepliesOnOpenConnections}: replies are held back for a while although the server has run the
 *       commands: a reply lost on the way back, as a client sees it;</li>
 *   <li>{@link #holdRequestsOnOpenConnections}: requests are held back until {@link #releaseRequests()}, even after
 *       their client gave up and closed the connection: a request that reaches the server late (a congested or
 *       partitioned network, a retransmission, a proxy), after everything the client did once it timed out.</li>
 * </ul>
 * A client's close is passed on as a half-close, so the server still runs and answers what it was sent. Every thread
 * and socket it started ends with {@link #close()}.
 */
final class StallingProxy implements AutoCloseable {

    private final ServerSocket listener;
    private final int targetPort;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final List<Thread> threads = new CopyOnWriteArrayList<>();
    private final AtomicInteger connections = new AtomicInteger();
    private volatile int stalledBelow;
    private volatile long stalledUntilNanos;
    private final Object gate = new Object();
    private volatile int heldBelow;
    private boolean holding; // guarded by gate
    private final AtomicInteger heldRequests = new AtomicInteger();
    private final AtomicInteger repliesToHeldConnections = new AtomicInteger();

    StallingProxy(int targetPort) {
        this.targetPort = targetPort;
        try {
            this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        start("proxy-accept", this::acceptLoop);
    }

    int port() {
        return listener.getLocalPort();
    }

    /** Holds back, for {@code d}, every reply on the connections open now. */
    void stallRepliesOnOpenConnections(Duration d) {
        stalledUntilNanos = System.nanoTime() + d.toNanos();
        stalledBelow = connections.get();
    }

    /** Holds back every request byte on the connections open now, until {@link #releaseRequests()}. */
    void holdRequestsOnOpenConnections() {
        synchronized (gate) {
            holding = true;
            heldBelow = connections.get();
        }
    }

    /** Lets the held requests through, in order. */
    void releaseRequests() {
        synchronized (gate) {
            holding = false;
            gate.notifyAll();
        }
    }

    /** Waits until at least one request is being held (the client sent it; the server has not seen it). */
    void awaitHeldRequest(Duration max) {
        await(() -> heldRequests.get() > 0, max, "no request was held");
    }

    /** Waits until the server answered on a connection whose requests were held: it has run the late request. */
    void awaitReplyToHeldRequest(Duration max) {
        await(() -> repliesToHeldConnections.get() > 0, max, "the server never answered the held request");
    }

    private static void await(java.util.function.BooleanSupplier done, Duration max, String failure) {
        long deadline = System.nanoTime() + max.toNanos();
        while (!done.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException(failure + " within " + max);
            }
            RedisServerProcess.sleep(5);
        }
    }

    private void acceptLoop() {
        while (!listener.isClosed()) {
            try {
                Socket client = listener.accept();
                Socket server = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                sockets.add(client);
                sockets.add(server);
                int id = connections.getAndIncrement();
                start("proxy-up-" + id, () -> requests(client, server, id));
                start("proxy-down-" + id, () -> replies(server, client, id));
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    /**
     * Client to server; requests wait while their connection is held. The client's close (Jedis closes with a reset,
     * {@code SO_LINGER 0}) becomes a half-close towards the server, which then still answers what it was sent.
     */
    private void requests(Socket client, Socket server, int id) {
        byte[] buf = new byte[16 * 1024];
        try {
            InputStream in = client.getInputStream();
            OutputStream out = server.getOutputStream();
            int n;
            while ((n = readOrEnd(in, buf)) >= 0) {
                if (id < heldBelow) {
                    synchronized (gate) {
                        if (holding) {
                            heldRequests.incrementAndGet();
                        }
                        while (holding) {
                            gate.wait();
                        }
                    }
                }
                out.write(buf, 0, n);
                out.flush();
            }
            server.shutdownOutput(); // the server still answers what it was sent, then closes
        } catch (IOException | InterruptedException e) {
            closeQuietly(client);
            closeQuietly(server);
        }
    }

    private static int readOrEnd(InputStream in, byte[] buf) {
        try {
            return in.read(buf);
        } catch (IOException reset) {
            return -1;
        }
    }

    /** Server to client; replies wait while their connection is stalled. */
    private void replies(Socket server, Socket client, int id) {
        byte[] buf = new byte[16 * 1024];
        try (InputStream in = server.getInputStream(); OutputStream out = client.getOutputStream()) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                if (id < heldBelow) {
                    repliesToHeldConnections.incrementAndGet();
                }
                long wait;
                while (id < stalledBelow && (wait = stalledUntilNanos - System.nanoTime()) > 0) {
                    Thread.sleep(Math.max(1, TimeUnit.NANOSECONDS.toMillis(wait)));
                }
                out.write(buf, 0, n);
                out.flush();
            }
        } catch (IOException | InterruptedException e) {
            // a side closed: close the other one too
        } finally {
            closeQuietly(server);
            closeQuietly(client);
        }
    }

    private void start(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        threads.add(t);
        t.start();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // already closed
        }
    }

    @Override
    public void close() {
        try {
            listener.close();
        } catch (IOException ignored) {
            // already closed
        }
        releaseRequests();
        sockets.forEach(StallingProxy::closeQuietly);
        for (Thread t : threads) {
            t.interrupt();
            try {
                t.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
