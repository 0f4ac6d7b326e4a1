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
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP proxy in front of a redis-server that can make replies late: after {@link #stallOpenConnections}, the
 * replies on the connections open at that moment are held back for a while, although the server has executed the
 * commands. Connections opened afterwards pass freely. That is a reply lost on the way back, as a client sees it.
 * Every thread and socket it started ends with {@link #close()}.
 */
final class ReplyStallingProxy implements AutoCloseable {

    private final ServerSocket listener;
    private final int targetPort;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final List<Thread> threads = new CopyOnWriteArrayList<>();
    private final AtomicInteger connections = new AtomicInteger();
    private volatile int stalledBelow;
    private volatile long stalledUntilNanos;

    ReplyStallingProxy(int targetPort) {
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
    void stallOpenConnections(Duration d) {
        stalledUntilNanos = System.nanoTime() + d.toNanos();
        stalledBelow = connections.get();
    }

    private void acceptLoop() {
        while (!listener.isClosed()) {
            try {
                Socket client = listener.accept();
                Socket server = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                sockets.add(client);
                sockets.add(server);
                int id = connections.getAndIncrement();
                start("proxy-up-" + id, () -> pump(client, server, -1));
                start("proxy-down-" + id, () -> pump(server, client, id));
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    /** Copies bytes from {@code from} to {@code to}; replies ({@code id >= 0}) wait while their connection is stalled. */
    private void pump(Socket from, Socket to, int id) {
        byte[] buf = new byte[16 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                long wait;
                while (id >= 0 && id < stalledBelow && (wait = stalledUntilNanos - System.nanoTime()) > 0) {
                    Thread.sleep(Math.max(1, wait / 1_000_000));
                }
                out.write(buf, 0, n);
                out.flush();
            }
        } catch (IOException | InterruptedException e) {
            // a side closed: close the other one too
        } finally {
            closeQuietly(from);
            closeQuietly(to);
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
        sockets.forEach(ReplyStallingProxy::closeQuietly);
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
