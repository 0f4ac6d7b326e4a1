package dev.locker.faults;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

import java.net.InetSocketAddress;

/**
 * The in-memory MongoDB wire-protocol server (mongo-java-server) as a process of its own, so that the harness can kill,
 * restart and pause it by pid. It keeps everything in memory: a restart loses every lock document, acknowledged or not.
 * It runs until killed ({@link ServerProcess}'s watchdog kills it when the harness dies).
 */
public final class MongoServerMain {

    private MongoServerMain() {
    }

    /**
     * Serves on {@code 127.0.0.1:<port>} until killed.
     *
     * @param args the port
     * @throws InterruptedException never in practice (it sleeps until killed)
     */
    public static void main(String[] args) throws InterruptedException {
        if (args.length != 1) {
            throw new IllegalArgumentException("usage: MongoServerMain <port>");
        }
        MongoServer server = new MongoServer(new MemoryBackend());
        server.bind(new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0])));
        System.out.println("mongo-java-server listening on " + server.getLocalAddress());
        Thread.sleep(Long.MAX_VALUE);
    }
}
