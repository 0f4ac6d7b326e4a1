package dev.locker.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy on loopback that can <em>freeze</em>: while frozen it forwards no byte in either direction and keeps
 * every connection open, as a stalled network path, a half-dead load balancer or a paused peer looks to a client (no
 * reset, no error: only silence). Connections made while frozen are accepted and frozen too. {@link #thaw()} forwards
 * what was held back, in order.
 */
public final class FreezingProxy implements AutoCloseable {

    private final ServerSocket listener;
    private final String targetHost;
    private final int targetPort;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Object gate = new Object();
    private volatile boolean frozen;
    private volatile boolean closed;

    public FreezingProxy(String targetHost, int targetPort) {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        try {
            this.listener = new ServerSocket();
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the proxy's port", e);
        }
        daemon("freezing-proxy-accept-" + port(), this::acceptLoop);
    }

    /** The loopback port clients connect to. */
    public int port() {
        return listener.getLocalPort();
    }

    /** From now on no byte passes, either way; connections stay open. */
    public void freeze() {
        frozen = true;
    }

    /** Bytes pass again, those held back first. */
    public void thaw() {
        synchronized (gate) {
            frozen = false;
            gate.notifyAll();
        }
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket client = listener.accept();
                Socket server = new Socket(targetHost, targetPort);
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(server);
                daemon("freezing-proxy-up-" + port(), () -> pump(client, server));
                daemon("freezing-proxy-down-" + port(), () -> pump(server, client));
            } catch (IOException e) {
                if (!closed) {
                    continue;
                }
                return;
            }
        }
    }

    private void pump(Socket from, Socket to) {
        byte[] buf = new byte[16 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            while (true) {
                awaitThawed();
                int n = in.read(buf);
                if (n < 0) {
                    break;
                }
                awaitThawed(); // what was read when the freeze began is held back too
                out.write(buf, 0, n);
                out.flush();
            }
        } catch (IOException | InterruptedException e) {
            // the other side closed, or the proxy did
        } finally {
            closeQuietly(from);
            closeQuietly(to);
        }
    }

    private void awaitThawed() throws InterruptedException {
        synchronized (gate) {
            while (frozen && !closed) {
                gate.wait();
            }
        }
    }

    private static void daemon(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    @Override
    public void close() {
        closed = true;
        thaw();
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        sockets.forEach(FreezingProxy::closeQuietly);
    }
}
