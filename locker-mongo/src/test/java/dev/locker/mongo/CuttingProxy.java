package dev.locker.mongo;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Fault injection in front of a real server: a loopback TCP relay that, when armed, lets the next request containing
 * a given command name reach the server and then cuts the connection instead of relaying the reply. The client sees
 * a network error for a write that the server did apply — the case MongoDB's retryable writes exist for.
 */
final class CuttingProxy implements AutoCloseable {

    private final ServerSocket listener;
    private final InetSocketAddress target;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final AtomicInteger cutsLeft = new AtomicInteger();
    private volatile byte[] cutAfter = new byte[0];
    private final AtomicInteger cutsDone = new AtomicInteger();
    private final Semaphore stalled = new Semaphore(0);
    private volatile CountDownLatch stall;

    CuttingProxy(InetSocketAddress target) throws IOException {
        this.target = target;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread accept = new Thread(this::acceptLoop, "cutting-proxy-accept");
        accept.setDaemon(true);
        accept.start();
    }

    String address() {
        return "127.0.0.1:" + listener.getLocalPort();
    }

    /** The next {@code times} requests that contain {@code commandName} are applied, and their replies are lost. */
    void cutReplyTo(String commandName, int times) {
        cutAfter = commandName.getBytes(StandardCharsets.US_ASCII);
        cutsLeft.set(times);
    }

    /**
     * Like {@link #cutReplyTo} once, but the reply is held back until {@link #releaseStalled()}, and only then is the
     * connection cut: a request stays in flight for as long as the test needs.
     */
    void stallAndCutReplyTo(String commandName) {
        stall = new CountDownLatch(1);
        cutReplyTo(commandName, 1);
    }

    /** Waits until a reply is being held back by {@link #stallAndCutReplyTo}. */
    void awaitStalled() throws InterruptedException {
        stalled.acquire();
    }

    void releaseStalled() {
        stall.countDown();
    }

    int cuts() {
        return cutsDone.get();
    }

    private void acceptLoop() {
        while (!listener.isClosed()) {
            try {
                Socket client = listener.accept();
                Socket server = new Socket(target.getAddress(), target.getPort());
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(server);
                boolean[] cutNextReply = {false};
                pump(client, server, cutNextReply, true);
                pump(server, client, cutNextReply, false);
            } catch (IOException e) {
                return;
            }
        }
    }

    private void pump(Socket from, Socket to, boolean[] cutNextReply, boolean requests) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[64 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buf)) > 0) {
                    if (requests && cutsLeft.get() > 0 && contains(buf, n, cutAfter) && cutsLeft.getAndDecrement() > 0) {
                        cutNextReply[0] = true;
                    }
                    if (!requests && cutNextReply[0]) {
                        CountDownLatch hold = stall;
                        if (hold != null) {
                            stalled.release();
                            hold.await();
                        }
                        cutsDone.incrementAndGet();
                        closeQuietly(from);
                        closeQuietly(to);
                        return;
                    }
                    out.write(buf, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // one side closed: close the other
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "cutting-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    private static boolean contains(byte[] buf, int n, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= n; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (buf[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return needle.length == 0;
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // closing
        }
    }

    @Override
    public void close() throws IOException {
        listener.close();
        for (Socket s : sockets) {
            closeQuietly(s);
        }
    }
}
