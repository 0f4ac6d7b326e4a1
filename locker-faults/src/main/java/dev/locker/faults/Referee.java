package dev.locker.faults;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The guarded resource: a tiny line-based TCP service on loopback that the workers write to with their fencing
 * tokens. Per lock it keeps the highest token it accepted and who wrote it; a lower token is refused ({@code STALE}), the
 * highest token from a different worker is refused and flagged ({@code CLASH}: two holders were given one token).
 * Every decision goes on the timeline with the referee's own clock reading, taken under the same monitor that
 * decides, so the timeline's order of accepted writes is the order the resource applied them.
 *
 * <p>Protocol: the client sends {@code W <worker> <lock> <token> <deadlineNanos>\n}; the reply is {@code OK\n},
 * {@code STALE <highest>\n} or {@code CLASH <worker>\n}.
 */
public final class Referee implements AutoCloseable {

    /** The referee's source name on the timeline. */
    public static final String SOURCE = "referee";

    private record Highest(long token, String worker) {
    }

    private final Timeline timeline;
    private final ServerSocket listener;
    private final Map<String, Highest> highest = new HashMap<>();
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile boolean closed;

    /**
     * Starts listening on a free loopback port.
     *
     * @param timeline where decisions are recorded
     */
    public Referee(Timeline timeline) {
        this.timeline = timeline;
        try {
            listener = new ServerSocket();
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the referee's port", e);
        }
        Thread t = new Thread(this::acceptLoop, "referee-accept");
        t.setDaemon(true);
        t.start();
    }

    /**
     * The loopback port workers connect to.
     *
     * @return the port
     */
    public int port() {
        return listener.getLocalPort();
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket s = listener.accept();
                s.setTcpNoDelay(true);
                sockets.add(s);
                Thread t = new Thread(() -> serve(s), "referee-conn");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    private void serve(Socket s) {
        try (s; BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
             OutputStream out = s.getOutputStream()) {
            String line;
            while ((line = in.readLine()) != null) {
                String reply = decide(line);
                out.write((reply + "\n").getBytes(StandardCharsets.UTF_8));
                out.flush();
            }
        } catch (IOException e) {
            // the worker died or the referee closed: its writes so far are on the timeline
        }
    }

    /**
     * Decides one write request line (also usable without a socket).
     *
     * @param line {@code W <worker> <lock> <token> <deadlineNanos>}
     * @return the reply, without the line break
     */
    public String decide(String line) {
        String[] f = line.trim().split(" ");
        if (f.length != 5 || !f[0].equals("W")) {
            return "ERR want: W <worker> <lock> <token> <deadlineNanos>";
        }
        String worker = f[1];
        String lock = f[2];
        long token;
        long deadline;
        try {
            token = Long.parseLong(f[3]);
            deadline = Long.parseLong(f[4]);
        } catch (NumberFormatException e) {
            return "ERR token and deadline must be numbers";
        }
        synchronized (highest) {
            long now = System.nanoTime();
            Highest h = highest.get(lock);
            String late = deadline != 0 && now - deadline > 0 ? " (arrived " + (now - deadline) / 1_000_000
                    + " ms after the writer's deadline)" : "";
            if (h != null && token < h.token()) {
                timeline.add(new Event(now, SOURCE, Event.Type.STALE, lock, token, deadline,
                        "from " + worker + ", highest " + h.token() + " by " + h.worker() + late));
                return "STALE " + h.token();
            }
            if (h != null && token == h.token() && !worker.equals(h.worker())) {
                timeline.add(new Event(now, SOURCE, Event.Type.CLASH, lock, token, deadline,
                        "from " + worker + ", already written by " + h.worker() + late));
                return "CLASH " + h.worker();
            }
            highest.put(lock, new Highest(token, worker));
            timeline.add(new Event(now, SOURCE, Event.Type.ACCEPTED, lock, token, deadline, "from " + worker + late));
            return "OK";
        }
    }

    /**
     * The writer of a write the referee decided ({@code ACCEPTED}, {@code STALE}, {@code CLASH}).
     *
     * @param decision the referee's event
     * @return the worker id
     */
    public static String writer(Event decision) {
        String[] f = decision.detail().split(" ");
        return f.length >= 2 && f[0].equals("from") ? f[1].replace(",", "") : "?";
    }

    @Override
    public void close() {
        closed = true;
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        for (Socket s : sockets) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }
}
