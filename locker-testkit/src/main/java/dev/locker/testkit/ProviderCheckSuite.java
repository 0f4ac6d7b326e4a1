package dev.locker.testkit;

import dev.locker.api.LockerConfig;
import dev.locker.api.LockerProvider;
import dev.locker.api.Lockers;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What every {@link LockerProvider} keeps about {@link LockerProvider#check}: it applies the URI's options and refuses
 * a bad one without I/O. A backend's test extends it and names a URI of its backend; a server-backed backend points
 * that URI at {@link #port()}, a loopback listener that counts connections (it never answers), and the suite asserts
 * that none was made, even with options that are all good. Backends without a server assert their own kind of
 * "no I/O" in {@link #assertNoIo()} (no directory created, for instance).
 */
public abstract class ProviderCheckSuite {

    private ServerSocket listener;
    private final AtomicInteger connections = new AtomicInteger();

    /**
     * A URI of the backend under test without a query part; a server-backed one names {@code 127.0.0.1:}{@link #port()}.
     *
     * @return the URI
     */
    protected abstract String baseUri();

    /**
     * A URI like {@link #baseUri()} with a password in its user info containing {@code Pw0}, or null when the backend's
     * URIs take none.
     *
     * @return the URI, or null
     */
    protected String baseUriWithPassword() {
        return null;
    }

    /**
     * An option the backend does not know, as {@code name=value}; the check must refuse it naming it.
     *
     * @return the query part
     */
    protected String unknownOption() {
        return "noSuchOption=1";
    }

    /** Asserts that nothing was done outside the JVM: by default, that no connection reached {@link #port()}. */
    protected void assertNoIo() {
        assertEquals(0, connections.get(), "check() connected to the server");
    }

    /**
     * The port of the listener a server-backed URI names.
     *
     * @return the port
     */
    protected final int port() {
        return listener.getLocalPort();
    }

    @BeforeEach
    void listen() throws IOException {
        listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(() -> {
            while (!listener.isClosed()) {
                try (Socket s = listener.accept()) {
                    connections.incrementAndGet();
                } catch (SocketException closed) {
                    return;
                } catch (IOException e) {
                    connections.incrementAndGet();
                }
            }
        }, "provider-check-listener");
        t.setDaemon(true);
        t.start();
    }

    @AfterEach
    void stopListening() throws IOException {
        listener.close();
    }

    private static String withQuery(String uri, String query) {
        return uri + (uri.contains("?") ? "&" : "?") + query;
    }

    /** A connection made by a background thread the check started would arrive a little later: wait for it. */
    private void settle() throws InterruptedException {
        Thread.sleep(200);
    }

    @Test
    void theProviderOfTheSchemeServesCheck() {
        String uri = baseUri();
        String scheme = uri.substring(0, uri.indexOf(':')).toLowerCase(Locale.ROOT);
        LockerProvider p = Lockers.providers().get(scheme);
        assertTrue(p != null && p.schemes().contains(scheme), "a provider serves " + scheme);
        LockerConfig config = LockerConfig.builder().retries(7).build();
        assertEquals(config.retries(), p.check(uri, config).retries(), "settings the URI does not name are kept");
    }

    @Test
    void checkAppliesTheUrisOptionsWithoutIo() throws InterruptedException {
        LockerConfig config = LockerConfig.builder().expiry(Duration.ofSeconds(40)).retries(7).build();
        LockerConfig effective = Lockers.check(withQuery(baseUri(), "expiry=7s&maxKeyBytes=1000&why=nightly"), config);
        assertEquals(Duration.ofSeconds(7), effective.expiry());
        assertEquals(1000, effective.maxKeyBytes());
        assertEquals("nightly", effective.why());
        assertEquals(7, effective.retries());
        LockerConfig plain = Lockers.check(baseUri(), config);
        assertEquals(config.expiry(), plain.expiry(), "no option: the config as given");
        settle();
        assertNoIo();
    }

    @Test
    void aBadOptionIsRefusedByCheckWithoutIo() throws InterruptedException {
        LockerConfig config = LockerConfig.defaults();
        IllegalArgumentException banana = assertThrows(IllegalArgumentException.class,
                () -> Lockers.check(withQuery(baseUri(), "expiry=banana"), config));
        assertTrue(banana.getMessage().contains("expiry"), banana.getMessage());
        IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
                () -> Lockers.check(withQuery(baseUri(), unknownOption()), config));
        String name = unknownOption().substring(0, unknownOption().indexOf('='));
        assertTrue(unknown.getMessage().contains(name), unknown.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Lockers.check(withQuery(baseUri(), "maxKeyBytes=many"), config));
        settle();
        assertNoIo();
    }

    @Test
    void checkAndOpenAgreeOnABadOption() {
        String uri = withQuery(baseUri(), "expiry=banana");
        IllegalArgumentException checked = assertThrows(IllegalArgumentException.class,
                () -> Lockers.check(uri, LockerConfig.defaults()));
        IllegalArgumentException opened = assertThrows(IllegalArgumentException.class,
                () -> Lockers.open(uri, LockerConfig.defaults()));
        assertEquals(checked.getMessage(), opened.getMessage());
        assertSame(checked.getClass(), opened.getClass());
        assertNoIo();
    }

    @Test
    void aRefusedUriNamesNoPassword() throws InterruptedException {
        String uri = baseUriWithPassword();
        if (uri == null) {
            return;
        }
        for (String query : new String[]{"expiry=banana", unknownOption(), "password=Pw0Other&expiry=banana"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Lockers.check(withQuery(uri, query), LockerConfig.defaults()));
            for (Throwable t = e; t != null; t = t.getCause()) {
                assertFalse(String.valueOf(t.getMessage()).contains("Pw0"), t.toString());
            }
        }
        settle();
        assertNoIo();
    }

    /**
     * A raw '&amp;' inside a secret option's value splits the secret: what follows looks like an option, one the backend
     * does not know. Whether the backend knows the secret option or not, its refusal (and the URI as
     * {@link Lockers#redact} shows it) holds no piece of the secret: not the part before the '&amp;', nor the "option"
     * after it, by name or value; nor, with a malformed percent-escape in the secret, the characters after its '%'.
     */
    @Test
    void aRawAmpersandInASecretOptionLeaksNoPieceOfIt() throws InterruptedException {
        for (String query : new String[]{"password=Pw0a&Pw0b=Pw0c", "password=Pw0a&Pw0b=Pw0c&expiry=1s",
                "password=Pw0a&Pw0b", "password=Pw0a&=Pw0b", "apiToken=Pw0a&Pw0b=1&Pw0b=2",
                "expiry=1s&secret=Pw0a&Pw0b=Pw0c&Pw0d=Pw0e", "password=Pw0a%Zq", "expiry=1s&apiToken=Pw0a%Zq"}) {
            String uri = withQuery(baseUri(), query);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Lockers.check(uri, LockerConfig.defaults()), uri);
            for (Throwable t = e; t != null; t = t.getCause()) {
                assertFalse(String.valueOf(t.getMessage()).contains("Pw0") || String.valueOf(t.getMessage()).contains("Zq"),
                        uri + ": " + t);
            }
            assertFalse(Lockers.redact(uri).contains("Pw0"), Lockers.redact(uri));
        }
        settle();
        assertNoIo();
    }
}
