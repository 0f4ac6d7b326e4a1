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
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

/**
 * The one fault proxy of the tests: a TCP proxy on loopback between clients and one server, whose faults each test
 * module and the fault suite turn on as they need. Each fault below is one a real network or endpoint shows.
 *
 * <p>It can <em>freeze</em>: while frozen it forwards no byte in either direction and keeps
 * every connection open, as a stalled network path, a half-dead load balancer or a paused peer looks to a client (no
 * reset, no error: only silence). Connections made while frozen are accepted and frozen too. {@link #thaw()} forwards
 * what was held back, in order. Made with a marker, it can also freeze just the connections whose client sent the
 * marker ({@link #freezeMarked()}), as a NAT or firewall that lost the state of those connections alone.
 *
 * <p>It can also make one direction late on the connections open at the moment it is told to (later connections
 * pass freely): {@link #stallRepliesOnOpenConnections} holds replies back for a while although the server has run the
 * commands (a reply lost on the way back, as a client sees it); {@link #holdRequestsOnOpenConnections} holds requests
 * back until {@link #releaseRequests()}, even after their client gave up and closed (a request that reaches the server
 * late). A client's close is passed on as a half-close, so the server still runs and answers what it was sent.
 * {@link #dropNextMarkedReplyAndGoDown()} loses the reply to the next marked request with its connection, and refuses
 * connections until {@link #comeBack()}: an endpoint that fails over just after the server ran a command.
 *
 * <p>{@link #holdNextRequestCarrying} makes one request arrive twice: it keeps the request and resets its client's
 * connection, so the client repeats it on a fresh one; {@link #deliverLateCopy()} then sends the kept copy on its
 * own connection. {@link #switchTo} moves the proxy to another server and closes the open connections, as a virtual
 * IP does in a failover. A target that refuses a connection makes the proxy close its client's connection at once.
 * {@link #cutRepliesToRequestsCarrying} lets requests reach the server and cuts the connection instead of passing
 * their replies on: a write the server applied while its client saw a network error.
 */
public final class FaultProxy implements AutoCloseable {

    private final int port;
    private volatile ServerSocket listener;
    private volatile InetSocketAddress target; // one field, so a switch never pairs one host with another's port
    private final String marker; // upper case; null: none
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final List<Link> links = new CopyOnWriteArrayList<>();
    private final Object gate = new Object();
    private final AtomicInteger connections = new AtomicInteger();
    private final AtomicInteger heldRequests = new AtomicInteger();
    private final AtomicInteger repliesToHeldConnections = new AtomicInteger();
    private volatile boolean frozen;
    private volatile boolean closed;
    private volatile int stalledBelow; // connections numbered below it have their replies stalled
    private volatile long stalledUntilNanos;
    private volatile int heldBelow; // connections numbered below it have their requests held while holding
    private boolean holding; // guarded by gate
    private final AtomicInteger markedRequests = new AtomicInteger();
    private final AtomicBoolean dropArmed = new AtomicBoolean();
    private final AtomicReference<byte[]> lateCopyMarker = new AtomicReference<>();
    private volatile byte[] lateCopy;
    private volatile Socket lateCopyUpstream; // kept open after its client's reset: the late copy goes through it
    private final CompletableFuture<String> lateCopyReply = new CompletableFuture<>();
    private volatile byte[] cutNeedle;
    private final AtomicInteger cutsLeft = new AtomicInteger();
    private final AtomicInteger cutsDone = new AtomicInteger();
    private final Semaphore stalledCuts = new Semaphore(0);
    private volatile CountDownLatch stall;

    /** One connection through the proxy: its number, whether its client sent the marker, whether it alone is frozen. */
    private static final class Link {
        final int id;
        volatile boolean marked;
        volatile boolean dropReply;
        volatile boolean cutReply;
        volatile boolean frozen;

        Link(int id) {
            this.id = id;
        }
    }

    public FaultProxy(String targetHost, int targetPort) {
        this(targetHost, targetPort, null);
    }

    /**
     * A proxy that also notes which connections' clients have sent {@code marker} (in any case; a command name such as
     * {@code SUBSCRIBE}, say), for {@link #freezeMarked()}; a marker split across two reads is not seen.
     */
    public FaultProxy(String targetHost, int targetPort, String marker) {
        this.target = InetSocketAddress.createUnresolved(targetHost, targetPort);
        this.marker = marker == null ? null : marker.toUpperCase(Locale.ROOT);
        try {
            this.listener = new ServerSocket();
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the proxy's port", e);
        }
        this.port = listener.getLocalPort();
        ServerSocket first = listener;
        daemon("fault-proxy-accept-" + port, () -> acceptLoop(first));
    }

    /** The loopback port clients connect to. */
    public int port() {
        return port;
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

    /** Holds back, for {@code d}, every reply on the connections open now. */
    public void stallRepliesOnOpenConnections(Duration d) {
        stalledUntilNanos = System.nanoTime() + d.toNanos();
        stalledBelow = connections.get();
    }

    /** Holds back every request byte on the connections open now, until {@link #releaseRequests()}. */
    public void holdRequestsOnOpenConnections() {
        synchronized (gate) {
            holding = true;
            heldBelow = connections.get();
        }
    }

    /** Lets the held requests through, in order. */
    public void releaseRequests() {
        synchronized (gate) {
            holding = false;
            gate.notifyAll();
        }
    }

    /** Waits until at least one request is being held: the client sent it, the server has not seen it. */
    public void awaitHeldRequest(Duration max) {
        await(() -> heldRequests.get() > 0, max, "no request was held");
    }

    /** Waits until the server answered on a connection whose requests were held: it has run the late request. */
    public void awaitReplyToHeldRequest(Duration max) {
        await(() -> repliesToHeldConnections.get() > 0, max, "the server never answered the held request");
    }

    private static void await(BooleanSupplier done, Duration max, String failure) {
        long deadline = System.nanoTime() + max.toNanos();
        while (!done.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException(failure + " within " + max);
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting: " + failure, e);
            }
        }
    }

    /** How many client reads held the marker so far: requests such as a script call, counted once per read. */
    public int markedRequests() {
        return markedRequests.get();
    }

    /**
     * The server's reply to the next request holding the marker is lost: the client's connection is reset instead,
     * and the proxy refuses connections until {@link #comeBack()}. The server has run the request all the same.
     */
    public void dropNextMarkedReplyAndGoDown() {
        dropArmed.set(true);
    }

    /**
     * Keeps the next request that carries {@code marker} (its bytes on the wire, case as given) and resets its client's
     * connection: the client saw its request leave and no reply, so it repeats it on a fresh connection.
     */
    public void holdNextRequestCarrying(String marker) {
        if (marker == null || marker.isEmpty()) {
            throw new IllegalArgumentException("marker must be a non-empty string");
        }
        lateCopyMarker.set(marker.getBytes(StandardCharsets.ISO_8859_1));
    }

    /** True once a request was kept for a late copy. */
    public boolean holdsALateCopy() {
        return lateCopy != null;
    }

    /** Sends the kept request to the server now, on the connection it came in on, and returns the reply as text. */
    public String deliverLateCopy() throws IOException, InterruptedException {
        byte[] request = lateCopy;
        if (request == null) {
            throw new IllegalStateException("no request was kept for a late copy");
        }
        OutputStream out = lateCopyUpstream.getOutputStream();
        out.write(request);
        out.flush();
        try {
            return lateCopyReply.get(10, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("the server never answered the late copy", e);
        }
    }

    /**
     * The next {@code times} requests that carry {@code needle} (bytes on the wire, case as given) reach the server;
     * instead of each one's reply, its client gets a closed connection.
     */
    public void cutRepliesToRequestsCarrying(String needle, int times) {
        armCuts(needle, times, null);
    }

    /**
     * As {@link #cutRepliesToRequestsCarrying} once, but the reply is held until {@link #releaseStalledReply()} before
     * the cut: a request stays in flight for as long as the test needs.
     */
    public void stallThenCutReplyToRequestCarrying(String needle) {
        armCuts(needle, 1, new CountDownLatch(1));
    }

    private void armCuts(String needle, int times, CountDownLatch stallOrNull) {
        if (needle == null || needle.isEmpty() || times < 0) {
            throw new IllegalArgumentException("needle must be a non-empty string and times at least 0");
        }
        stall = stallOrNull;
        cutNeedle = needle.getBytes(StandardCharsets.ISO_8859_1);
        cutsLeft.set(times);
    }

    /** Waits until a reply is being held by {@link #stallThenCutReplyToRequestCarrying}. */
    public void awaitStalledReply() throws InterruptedException {
        stalledCuts.acquire();
    }

    /** Lets the held reply go on to its cut. */
    public void releaseStalledReply() {
        CountDownLatch held = stall;
        if (held != null) {
            held.countDown();
        }
    }

    /** How many replies were cut so far. */
    public int cutReplies() {
        return cutsDone.get();
    }

    /** {@code 127.0.0.1:port}: the address clients connect to, as a connection string takes it. */
    public String address() {
        return "127.0.0.1:" + port;
    }

    /** Sends new connections to {@code host:port} and closes the open ones, so clients reconnect to it. */
    public void switchTo(String host, int port) {
        target = InetSocketAddress.createUnresolved(host, port);
        sockets.forEach(FaultProxy::closeQuietly);
    }

    /** Accepts connections again on the same port, after {@link #dropNextMarkedReplyAndGoDown()} took it down. */
    public void comeBack() {
        try {
            ServerSocket again = new ServerSocket();
            again.setReuseAddress(true);
            again.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            listener = again;
            daemon("fault-proxy-accept-" + port, () -> acceptLoop(again));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the proxy's port " + port + " again", e);
        }
    }

    private void acceptLoop(ServerSocket on) {
        while (!closed && !on.isClosed()) {
            try {
                Socket client = on.accept();
                Socket server;
                try {
                    InetSocketAddress to = target;
                    server = new Socket(to.getHostString(), to.getPort());
                } catch (IOException down) {
                    closeQuietly(client); // the target is down: its client sees a closed connection and may retry
                    continue;
                }
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(server);
                Link link = new Link(connections.getAndIncrement());
                links.add(link);
                daemon("fault-proxy-up-" + port(), () -> requests(client, server, link));
                daemon("fault-proxy-down-" + port(), () -> replies(server, client, link));
            } catch (IOException e) {
                if (closed) {
                    return;
                }
                pause(); // a failing accept would otherwise spin
            }
        }
    }

    /**
     * Client to server. The client's close (Jedis closes with a reset) becomes a half-close towards the server, which
     * then still answers what it was sent.
     */
    private void requests(Socket client, Socket server, Link link) {
        byte[] buf = new byte[16 * 1024];
        try {
            InputStream in = client.getInputStream();
            OutputStream out = server.getOutputStream();
            int n;
            while (true) {
                awaitThawed(link);
                n = readOrEnd(in, buf);
                if (n < 0) {
                    break;
                }
                byte[] late = lateCopyMarker.get();
                if (late != null && contains(buf, n, late) && lateCopyMarker.compareAndSet(late, null)) {
                    lateCopy = Arrays.copyOf(buf, n);
                    lateCopyUpstream = server;
                    client.setSoLinger(true, 0);
                    client.close(); // a reset: the client saw its request leave, and no reply
                    return;
                }
                byte[] cut = cutNeedle;
                if (cut != null && cutsLeft.get() > 0 && contains(buf, n, cut) && cutsLeft.getAndDecrement() > 0) {
                    link.cutReply = true; // set before the request goes on, so before its reply comes back
                }
                if (marker != null && new String(buf, 0, n, StandardCharsets.ISO_8859_1)
                        .toUpperCase(Locale.ROOT).contains(marker)) {
                    link.marked = true;
                    markedRequests.incrementAndGet();
                    if (dropArmed.compareAndSet(true, false)) {
                        link.dropReply = true; // set before the request goes on, so before its reply comes back
                    }
                }
                awaitThawed(link); // what was read when the freeze began is held back too
                awaitReleased(link);
                out.write(buf, 0, n);
                out.flush();
            }
            server.shutdownOutput();
        } catch (IOException | InterruptedException e) {
            closeQuietly(client);
            if (lateCopyUpstream != server) {
                closeQuietly(server);
            }
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

    private static int readOrEnd(InputStream in, byte[] buf) {
        try {
            return in.read(buf);
        } catch (IOException reset) {
            return -1;
        }
    }

    /** Server to client; replies wait while their connection is frozen or stalled. */
    private void replies(Socket server, Socket client, Link link) {
        byte[] buf = new byte[16 * 1024];
        try (InputStream in = server.getInputStream()) {
            while (true) {
                awaitThawed(link);
                int n = in.read(buf);
                if (n < 0) {
                    break;
                }
                if (lateCopyUpstream == server) { // its client is gone: the reply is the late copy's
                    lateCopyReply.complete(new String(buf, 0, n, StandardCharsets.UTF_8));
                    continue;
                }
                if (link.id < heldBelow) {
                    repliesToHeldConnections.incrementAndGet();
                }
                if (link.cutReply) { // the server applied the request: its client gets a closed connection
                    CountDownLatch held = stall;
                    if (held != null) {
                        stalledCuts.release();
                        held.await();
                    }
                    cutsDone.incrementAndGet();
                    return;
                }
                if (link.dropReply) { // the server ran the request: lose its reply with the connection
                    listener.close();
                    client.setSoLinger(true, 0);
                    return;
                }
                awaitThawed(link);
                long wait;
                while (link.id < stalledBelow && !closed && (wait = stalledUntilNanos - System.nanoTime()) > 0) {
                    Thread.sleep(Math.max(1, TimeUnit.NANOSECONDS.toMillis(wait)));
                }
                OutputStream out = client.getOutputStream();
                out.write(buf, 0, n);
                out.flush();
            }
        } catch (IOException | InterruptedException e) {
            // the other side closed, or the proxy did
        } finally {
            closeQuietly(server);
            closeQuietly(client);
            sockets.remove(server); // a long run makes many connections: keep only the open ones
            sockets.remove(client);
            links.remove(link);
        }
    }

    private void awaitReleased(Link link) throws InterruptedException {
        if (link.id >= heldBelow) {
            return;
        }
        synchronized (gate) {
            if (holding && !closed) {
                heldRequests.incrementAndGet();
            }
            while (holding && !closed) {
                gate.wait();
            }
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

    private static void pause() {
        try {
            Thread.sleep(10);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
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
        releaseRequests();
        releaseStalledReply();
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        sockets.forEach(FaultProxy::closeQuietly);
    }
}
