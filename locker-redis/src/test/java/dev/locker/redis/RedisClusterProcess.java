package dev.locker.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * A small local Redis Cluster: three masters, no replicas, each a {@link RedisServerProcess} (so each dies with the
 * test JVM), joined by {@code redis-cli --cluster create}. Enough to prove that every key of a lock stays in one slot.
 */
final class RedisClusterProcess implements AutoCloseable {

    private final List<RedisServerProcess> nodes = new ArrayList<>();

    private RedisClusterProcess() {
    }

    static RedisClusterProcess start() {
        RedisClusterProcess c = new RedisClusterProcess();
        try {
            for (int i = 0; i < 3; i++) {
                c.nodes.add(RedisServerProcess.startWith(List.of("--save", "", "--appendonly", "no",
                        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", "5000"), true));
            }
            List<String> create = new ArrayList<>(List.of(RedisServerProcess.REDIS_CLI, "--cluster", "create"));
            for (RedisServerProcess n : c.nodes) {
                create.add("127.0.0.1:" + n.port());
            }
            create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
            String out = RedisServerProcess.run(create);
            if (!out.contains("All 16384 slots covered")) {
                throw new IllegalStateException("redis-cli --cluster create failed:\n" + out);
            }
            for (RedisServerProcess n : c.nodes) {
                while (!n.cli("CLUSTER", "INFO").contains("cluster_state:ok")) {
                    RedisServerProcess.sleep(50);
                }
            }
            return c;
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
    }

    List<RedisServerProcess> nodes() {
        return nodes;
    }

    /** {@code redis://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3}: several hosts mean Cluster mode. */
    String uri() {
        return "redis://" + nodes.stream().map(n -> "127.0.0.1:" + n.port()).collect(Collectors.joining(","));
    }

    @Override
    public void close() {
        nodes.forEach(RedisServerProcess::close);
    }
}
