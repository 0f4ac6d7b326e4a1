package dev.locker.faults;

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
 * A TCP forwarder on loopback with a target that can be switched: the workers' one address for a Redis whose master
 * moves in a failover, as a virtual IP or a Sentinel-aware proxy gives clients in production. A switch closes every
 * open connection, so clients reconnect and reach the new target; nothing is forwarded to the old one after it.
 */
final class Forwarder implements AutoCloseable {

    private final ServerSocket listener;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile int targetPort;
    private volatile boolean closed;

    /**
     * A forwarder to {@code 127.0.0.1:targetPort}, listening on a free loopback port.
     *
     * @param targetPort the first target's port
     */
    Forwarder(int targetPort) {
        this.targetPort = targetPort;
        try {
            listener = new ServerSocket();
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the forwarder's port", e);
        }
        daemon("forwarder-accept-" + port(), this::acceptLoop);
    }

    int port() {
        return listener.getLocalPort();
    }

    /**
     * Sends new connections to {@code 127.0.0.1:port} and closes the open ones.
     *
     * @param port the new target's port
     */
    void switchTo(int port) {
        targetPort = port;
        sockets.forEach(Forwarder::closeQuietly);
        sockets.clear();
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket client = listener.accept();
                Socket server;
                try {
                    server = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                } catch (IOException down) {
                    closeQuietly(client); // the target is down: the client sees a closed connection and retries
                    continue;
                }
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(server);
                daemon("forwarder-up", () -> pump(client, server));
                daemon("forwarder-down", () -> pump(server, client));
            } catch (IOException e) {
                if (!closed) {
                    sleep();
                }
            }
        }
    }

    private void pump(Socket from, Socket to) {
        byte[] buf = new byte[16 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                out.write(buf, 0, n);
                out.flush();
            }
        } catch (IOException ignored) {
            // one side closed: close both below
        } finally {
            closeQuietly(from);
            closeQuietly(to);
            sockets.remove(from);
            sockets.remove(to);
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing is all we wanted
        }
    }

    private static void daemon(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
    }

    private static void sleep() {
        try {
            Thread.sleep(10);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing is all we wanted
        }
        sockets.forEach(Forwarder::closeQuietly);
    }
}
