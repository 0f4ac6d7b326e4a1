package dev.locker.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.ReadConcern;
import com.mongodb.WriteConcern;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;

import java.util.concurrent.TimeUnit;

/**
 * The client a locker talks through, with its write and read concerns and the name its messages give the server. A
 * client the locker makes fails fast by default: 3 s to select a server or connect, 10 s to read a reply.
 */
final class MongoConnections {

    private MongoConnections() {
    }

    /**
     * A client and what the locker needs to know of it.
     *
     * @param client       the client
     * @param owned        true when the locker made it, and so closes it
     * @param server       the server(s), as named in messages
     * @param writeConcern the write concern of every write
     * @param readConcern  the read concern of every read that decides
     */
    record Connection(MongoClient client, boolean owned, String server, WriteConcern writeConcern,
                      ReadConcern readConcern) {
    }

    /** An application's client, shared: the concerns given, else majority; the locker never closes it. */
    static Connection shared(MongoClient client, WriteConcern writeConcern, ReadConcern readConcern) {
        WriteConcern wc = writeConcern != null ? writeConcern : WriteConcern.MAJORITY;
        ReadConcern rc = readConcern != null ? readConcern : ReadConcern.MAJORITY;
        var cluster = client.getClusterDescription().getClusterSettings();
        String hosts = cluster.getSrvHost() != null ? "mongodb+srv://" + cluster.getSrvHost()
                : String.join(",", cluster.getHosts().stream().map(Object::toString).toList());
        return new Connection(client, false, hosts, wc, rc);
    }

    /**
     * A client of the locker's own for {@code connectionString}. The concerns given win, then the URI's, then
     * majority; the URI's timeouts win over the defaults.
     */
    static Connection open(String connectionString, WriteConcern writeConcern, ReadConcern readConcern) {
        ConnectionString cs = MongoLockerProvider.resolvedConnectionString(connectionString);
        WriteConcern wc = writeConcern != null ? writeConcern
                : cs.getWriteConcern() != null ? cs.getWriteConcern() : WriteConcern.MAJORITY;
        ReadConcern rc = readConcern != null ? readConcern
                : cs.getReadConcern() != null ? cs.getReadConcern() : ReadConcern.MAJORITY;
        MongoClientSettings.Builder settings = MongoClientSettings.builder().applyConnectionString(cs)
                .applicationName(cs.getApplicationName() != null ? cs.getApplicationName() : "locker-mongo");
        if (cs.getServerSelectionTimeout() == null) {
            settings.applyToClusterSettings(c -> c.serverSelectionTimeout(3, TimeUnit.SECONDS));
        }
        if (cs.getConnectTimeout() == null) {
            settings.applyToSocketSettings(s -> s.connectTimeout(3, TimeUnit.SECONDS));
        }
        if (cs.getSocketTimeout() == null) {
            settings.applyToSocketSettings(s -> s.readTimeout(10, TimeUnit.SECONDS));
        }
        String server = cs.isSrvProtocol() ? "mongodb+srv://" + cs.getHosts().get(0) : String.join(",", cs.getHosts());
        return new Connection(MongoClients.create(settings.build()), true, server, wc, rc);
    }
}
