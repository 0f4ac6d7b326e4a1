package dev.locker.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A loopback proxy to one Redis server that can make a request arrive late. Armed with a marker, it holds back the
 * next request that carries it and resets its client's connection: the client sees a connection that broke after
 * sending, and repeats the request on a fresh connection. {@link #deliverHeld()} sends the held copy to the server
 * afterwards, on the connection it came in on, as a network path or a proxy that delivers a request late does.
 */
final class LateCopyProxy implements AutoCloseable {

    private final ServerSocket listener;
    private final String targetHost;
    private final int targetPort;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile byte[] marker;
    private volatile byte[] held;
    private volatile Socket heldUpstream;
    private final CompletableFuture<String> heldReply = new CompletableFuture<>();
    private volatile boolean closed;

    LateCopyProxy(String targetHost, int targetPort) {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        try {
            listener = new ServerSocket();
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the proxy's port", e);
        }
        daemon("late-copy-proxy-accept", this::acceptLoop);
    }

    /** The loopback port clients connect to. */
    int port() {
        return listener.getLocalPort();
    }

    /** Holds back the next request that carries {@code marker} (as bytes on the wire), and resets its connection. */
    void holdNext(String marker) {
        this.marker = marker.getBytes(StandardCharsets.US_ASCII);
    }

    /** True once a request was held back. */
    boolean holds() {
        return held != null;
    }

    /** Sends the held request to the server now, and returns the server's reply to it as RESP text. */
    String deliverHeld() throws Exception {
        byte[] request = held;
        if (request == null) {
            throw new IllegalStateException("no request was held");
        }
        OutputStream out = heldUpstream.getOutputStream();
        out.write(request);
        out.flush();
        return heldReply.get(10, TimeUnit.SECONDS);
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
                daemon("late-copy-proxy-up", () -> requests(client, server));
                daemon("late-copy-proxy-down", () -> replies(server, client));
            } catch (IOException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    private void requests(Socket client, Socket server) {
        byte[] buf = new byte[64 * 1024];
        try {
            InputStream in = client.getInputStream();
            OutputStream out = server.getOutputStream();
            int n;
            while ((n = in.read(buf)) >= 0) {
                byte[] m = marker;
                if (m != null && contains(buf, n, m)) {
                    marker = null;
                    held = Arrays.copyOf(buf, n);
                    heldUpstream = server; // kept open: the late copy goes through it
                    client.setSoLinger(true, 0);
                    client.close(); // a reset: the client saw its request leave, and no reply
                    return;
                }
                out.write(buf, 0, n);
                out.flush();
            }
            server.shutdownOutput();
        } catch (IOException e) {
            if (heldUpstream != server) {
                closeQuietly(server);
            }
            closeQuietly(client);
        }
    }

    private void replies(Socket server, Socket client) {
        byte[] buf = new byte[64 * 1024];
        try (InputStream in = server.getInputStream()) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                if (heldUpstream == server) {
                    heldReply.complete(new String(buf, 0, n, StandardCharsets.UTF_8));
                    continue;
                }
                OutputStream out = client.getOutputStream();
                out.write(buf, 0, n);
                out.flush();
            }
        } catch (IOException e) {
            // the other side closed, or the proxy did
        } finally {
            if (heldUpstream != server) {
                closeQuietly(server);
            }
            closeQuietly(client);
        }
    }

    private static boolean contains(byte[] buf, int n, byte[] m) {
        outer:
        for (int i = 0; i + m.length <= n; i++) {
            for (int j = 0; j < m.length; j++) {
                if (buf[i + j] != m[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
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
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        sockets.forEach(LateCopyProxy::closeQuietly);
    }
}
