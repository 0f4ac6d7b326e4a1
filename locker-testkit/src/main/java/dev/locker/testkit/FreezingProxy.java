package dev.locker.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy on loopback that can <em>freeze</em>: while frozen it forwards no byte in either direction and keeps
 * every connection open, as a stalled network path, a half-dead load balancer or a paused peer looks to a client (no
 * reset, no error: only silence). Connections made while frozen are accepted and frozen too. {@link #thaw()} forwards
 * what was held back, in order. Made with a marker, it can also freeze just the connections whose client sent the
 * marker ({@link #freezeMarked()}), as a NAT or firewall that lost the state of those connections alone.
 */
public final class FreezingProxy implements AutoCloseable {

    private final ServerSocket listener;
    private final String targetHost;
    private final int targetPort;
    private final String marker; // upper case; null: none
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final List<Link> links = new CopyOnWriteArrayList<>();
    private final Object gate = new Object();
    private volatile boolean frozen;
    private volatile boolean closed;

    /** One connection through the proxy: whether its client sent the marker, and whether it alone is frozen. */
    private static final class Link {
        volatile boolean marked;
        volatile boolean frozen;
    }

    public FreezingProxy(String targetHost, int targetPort) {
        this(targetHost, targetPort, null);
    }

    /**
     * A proxy that also notes which connections' clients have sent {@code marker} (in any case; a command name such as
     * {@code SUBSCRIBE}, say), for {@link #freezeMarked()}; a marker split across two reads is not seen.
     */
    public FreezingProxy(String targetHost, int targetPort, String marker) {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.marker = marker == null ? null : marker.toUpperCase(Locale.ROOT);
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

    /**
     * Freezes the connections open now whose client has sent the marker so far, both ways, until {@link #thaw()}; the
     * others, and the connections made later, pass freely. Without a marker, it freezes nothing.
     */
    public void freezeMarked() {
        for (Link link : links) {
            if (link.marked) {
                link.frozen = true;
            }
        }
    }

    /** Bytes pass again, those held back first, on every connection. */
    public void thaw() {
        synchronized (gate) {
            frozen = false;
            links.forEach(link -> link.frozen = false);
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
                Link link = new Link();
                links.add(link);
                daemon("freezing-proxy-up-" + port(), () -> pump(client, server, link, true));
                daemon("freezing-proxy-down-" + port(), () -> pump(server, client, link, false));
            } catch (IOException e) {
                if (!closed) {
                    continue;
                }
                return;
            }
        }
    }

    private void pump(Socket from, Socket to, Link link, boolean fromClient) {
        byte[] buf = new byte[16 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            while (true) {
                awaitThawed(link);
                int n = in.read(buf);
                if (n < 0) {
                    break;
                }
                if (fromClient && marker != null && !link.marked && new String(buf, 0, n, StandardCharsets.ISO_8859_1)
                        .toUpperCase(Locale.ROOT).contains(marker)) {
                    link.marked = true;
                }
                awaitThawed(link); // what was read when the freeze began is held back too
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

    private void awaitThawed(Link link) throws InterruptedException {
        synchronized (gate) {
            while ((frozen || link.frozen) && !closed) {
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
