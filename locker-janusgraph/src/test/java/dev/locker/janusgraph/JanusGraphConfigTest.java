package dev.locker.janusgraph;

import dev.locker.api.Locker;
import org.janusgraph.diskstorage.BackendException;
import org.janusgraph.diskstorage.configuration.ModifiableConfiguration;
import org.janusgraph.graphdb.configuration.GraphDatabaseConfiguration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What LockerStoreManager checks when a graph opens: bad input is refused before the data backend is constructed,
 * JanusGraph's lock settings are mapped, and no password reaches a message or the log.
 */
class JanusGraphConfigTest {

    private static final Duration LONG_EXPIRY = Duration.ofMinutes(5);
    private final String share = "jg-config-" + System.nanoTime();
    private final GraphInstances graphs = new GraphInstances(share);

    private String memUri() {
        return "mem:" + share + "?protocol=wait-and-read-back&lockWait=10ms";
    }

    private ModifiableConfiguration config(String instance) {
        return GraphInstances.config(share, instance, share, memUri(), LONG_EXPIRY);
    }

    private LockerStoreManager open(ModifiableConfiguration c) throws BackendException {
        return graphs.open(c);
    }

    @AfterEach
    void closeAll() throws BackendException {
        graphs.close();
    }

    /**
     * A bad option in the Locker URI is refused before the data backend is constructed (for CQL or HBase, connected).
     */
    @Test
    void aBadLockerUriIsRefusedBeforeTheDataBackendIsOpened() {
        ModifiableConfiguration c = config("a");
        c.set(LockerOptions.URI, "mem:" + share + "?protocol=wait-and-read-back&expiry=banana");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> open(c));
        assertTrue(e.getMessage().contains("expiry"), e.getMessage());
        assertEquals(0, HookedStoreManager.opened(share), "the data backend was opened before the URI was checked");
    }

    /**
     * A namespace longer than the backend's keys, or a maxKeyBytes below the smallest stand-in, cannot work. Both are
     * refused when the graph opens, before any I/O.
     */
    @Test
    void aNamespaceOrMaxKeyBytesThatCannotWorkIsRefusedAtStart() {
        ModifiableConfiguration longNamespace = config("a");
        longNamespace.set(LockerOptions.NAMESPACE, "n".repeat(5000));
        assertThrows(IllegalArgumentException.class, () -> open(longNamespace), "a namespace longer than maxKeyBytes");
        ModifiableConfiguration tiny = config("b");
        tiny.set(LockerOptions.URI, memUri() + "&maxKeyBytes=32");
        assertThrows(IllegalArgumentException.class, () -> open(tiny), "maxKeyBytes below the smallest stand-in");
        assertEquals(0, HookedStoreManager.opened(share));
    }

    /** Bad input that LockerStoreManager checks itself is refused before the data backend is constructed. */
    @Test
    void badNamespaceAndTimingsAreRefusedBeforeTheDataBackendIsOpened() {
        ModifiableConfiguration nul = config("a");
        nul.set(LockerOptions.NAMESPACE, "graph\0one");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> open(nul));
        assertTrue(e.getMessage().contains("storage.locker.namespace"), e.getMessage());
        ModifiableConfiguration negative = config("a");
        negative.set(GraphDatabaseConfiguration.LOCK_EXPIRE, Duration.ofSeconds(-1));
        assertThrows(IllegalArgumentException.class, () -> open(negative));
        ModifiableConfiguration self = config("a");
        self.set(LockerOptions.BACKEND, LockerStoreManager.class.getName());
        e = assertThrows(IllegalArgumentException.class, () -> open(self));
        assertTrue(e.getMessage().contains("storage.locker.backend"), e.getMessage());
        assertEquals(0, HookedStoreManager.opened(share));
    }

    /** JanusGraph's lock settings reach the Locker; the URI's query overrides them; the instance id is the rid. */
    @Test
    void janusGraphLockSettingsAreMappedAndTheUriOverridesThem() throws Exception {
        ModifiableConfiguration c = config("instance-7");
        c.set(GraphDatabaseConfiguration.LOCK_EXPIRE, Duration.ofSeconds(42));
        c.set(GraphDatabaseConfiguration.LOCK_WAIT, Duration.ofMillis(33));
        c.set(GraphDatabaseConfiguration.LOCK_RETRY, 7);
        c.set(LockerOptions.URI, "mem:" + share + "?protocol=wait-and-read-back");
        Locker mapped = open(c).locker();
        assertEquals(Duration.ofSeconds(42), mapped.config().expiry());
        assertEquals(Duration.ofMillis(33), mapped.config().lockWait());
        assertEquals(7, mapped.config().retries());
        assertTrue(mapped.rid().contains("instance-7"), mapped.rid());

        ModifiableConfiguration o = config("instance-8");
        o.set(GraphDatabaseConfiguration.LOCK_EXPIRE, Duration.ofSeconds(42));
        o.set(LockerOptions.URI, "mem:" + share + "?protocol=wait-and-read-back&expiry=9s&lockWait=5ms");
        Locker overridden = open(o).locker();
        assertEquals(Duration.ofSeconds(9), overridden.config().expiry());
        assertEquals(Duration.ofMillis(5), overridden.config().lockWait());
    }

    /**
     * No password of the Locker URI in any message of the failure, its causes, or what is logged meanwhile: for
     * passwords as generated secrets look (base64 has '/' and '+'; some have ':'), in the user info or the query.
     */
    @Test
    void noPasswordOfTheUriReachesAMessageOrTheLog() {
        List<String> leaks = new ArrayList<>();
        String[] uris = {
                "redis://default:Pw0/Sec+ret=@127.0.0.1:notaport",
                "redis://default:Pw0Sec@ret@127.0.0.1:notaport",
                "redis://127.0.0.1:6379/0?password=Pw0Secret&expiry=banana",
                "mongodb://user:Pw0/Sec+ret=@127.0.0.1:notaport/db",
                "nosuch://user:Pw0:Secret@host/",
        };
        for (String uri : uris) {
            ModifiableConfiguration c = config("a");
            c.set(LockerOptions.URI, uri);
            PrintStream err = System.err;
            ByteArrayOutputStream captured = new ByteArrayOutputStream();
            Throwable failure = null;
            try {
                System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
                open(c);
            } catch (Throwable t) {
                failure = t;
            } finally {
                System.setErr(err);
            }
            StringBuilder seen = new StringBuilder(captured.toString(StandardCharsets.UTF_8));
            for (Throwable t = failure; t != null; t = t.getCause()) {
                seen.append('\n').append(t);
            }
            if (failure == null) {
                leaks.add(uri + " was accepted");
            } else if (seen.toString().contains("Pw0")) {
                leaks.add(uri + " -> " + seen.toString().replace('\n', ' '));
            }
        }
        assertTrue(leaks.isEmpty(), String.join("\n", leaks));
    }
}
