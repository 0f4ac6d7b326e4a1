package dev.locker.redis;

import dev.locker.testkit.RedisServer;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.LockerConfig;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code rediss://}: a TLS-only port of a real redis-server with a throw-away self-signed certificate (made with
 * openssl), trusted through {@link RedisLockerBuilder#sslSocketFactory}. An untrusted or misnamed certificate is a
 * permanent failure that names the server.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisTlsTest {

    private RedisServer server;
    private int tlsPort;
    private Path certs;

    @BeforeAll
    void start() throws Exception {
        Assumptions.assumeFalse(RedisTarget.isExternal(), "starts its own TLS server");
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/openssl")), "openssl is needed for a certificate");
        certs = Files.createTempDirectory("locker-redis-tls-");
        makeCert("localhost", "DNS:localhost,IP:127.0.0.1");
        RedisServer.run(List.of("keytool", "-importcert", "-noprompt", "-storetype", "PKCS12",
                "-alias", "redis", "-file", certs.resolve("localhost.pem").toString(),
                "-keystore", certs.resolve("trust.p12").toString(), "-storepass", "changeit"));
        tlsPort = RedisServer.freePort(false);
        server = RedisServer.start("--tls-port", Integer.toString(tlsPort),
                "--tls-cert-file", certs.resolve("localhost.pem").toString(),
                "--tls-key-file", certs.resolve("localhost.key").toString(),
                "--tls-ca-cert-file", certs.resolve("localhost.pem").toString(),
                "--tls-auth-clients", "no", "--bind", "127.0.0.1", "127.0.0.2");
    }

    @AfterAll
    void stop() throws Exception {
        if (server != null) {
            server.close();
        }
        if (certs != null) {
            try (var files = Files.list(certs)) {
                for (Path p : files.toList()) {
                    Files.delete(p);
                }
            }
            Files.delete(certs);
        }
    }

    private void makeCert(String name, String san) {
        String out = RedisServer.run(List.of("/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048",
                "-nodes", "-days", "1", "-subj", "/CN=" + name, "-addext", "subjectAltName=" + san,
                "-keyout", certs.resolve(name + ".key").toString(), "-out", certs.resolve(name + ".pem").toString()));
        if (!Files.exists(certs.resolve(name + ".pem"))) {
            throw new IllegalStateException("openssl failed: " + out);
        }
    }

    private SSLSocketFactory trusting(String name) throws Exception {
        KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
        ks.load(null, null);
        try (InputStream in = Files.newInputStream(certs.resolve(name + ".pem"))) {
            ks.setCertificateEntry(name, CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ks);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx.getSocketFactory();
    }

    private RedisLockerBuilder tls(String host) {
        return RedisLocker.builder().uri("rediss://" + host + ":" + tlsPort + "?prefix=tls:&restartGuard=0")
                .config(LockerConfig.builder().expiry(Duration.ofSeconds(5)).build());
    }

    @Test
    void locksOverTls() throws Exception {
        try (RedisLocker l = tls("localhost").sslSocketFactory(trusting("localhost")).build()) {
            assertTrue(l.server().startsWith("Redis rediss://"), l.server());
            try (Lease lease = l.acquire(KeyColumn.named("over-tls"), "encrypted")) {
                assertTrue(lease.fencingToken() > 0);
            }
        }
    }

    @Test
    void aTrustStoreFileNamedInTheUri() {
        String uri = "rediss://localhost:" + tlsPort + "?prefix=tls:&restartGuard=0&truststore="
                + certs.resolve("trust.p12") + "&truststorePassword=changeit";
        try (RedisLocker l = RedisLocker.builder().uri(uri).build()) {
            l.acquire(KeyColumn.named("truststore"), "from the URI").close();
        }
        try (RedisLocker l = RedisLocker.builder().uri(uri.replace("localhost", "127.0.0.2")).build()) {
            LockingException e = assertThrows(LockingException.class,
                    () -> l.acquire(KeyColumn.named("misnamed"), ""));
            assertInstanceOf(PermanentLockingException.class, e, e.toString());
        }
        try (RedisLocker l = RedisLocker.builder().uri(uri.replace("localhost", "127.0.0.2") + "&verifyHostname=false")
                .build()) {
            l.acquire(KeyColumn.named("misnamed-but-allowed"), "").close();
        }
    }

    @Test
    void anUntrustedCertificateIsPermanentAndNamesTheServer() {
        try (RedisLocker l = tls("localhost").build()) { // the JVM's default trust store does not know it
            LockingException e = assertThrows(LockingException.class,
                    () -> l.acquire(KeyColumn.named("untrusted"), ""));
            assertInstanceOf(PermanentLockingException.class, e, e.toString());
            assertTrue(e.getMessage().contains("localhost:" + tlsPort), e.getMessage());
        }
    }

    @Test
    void theHostnameIsVerifiedUnlessTurnedOff() throws Exception {
        // a trusted certificate, reached by an address it does not name (127.0.0.2)
        try (RedisLocker l = RedisLocker.builder().node("127.0.0.2", tlsPort).tls(true)
                .sslSocketFactory(trusting("localhost")).keyPrefix("tls:").restartGuard(Duration.ZERO).build()) {
            LockingException e = assertThrows(LockingException.class,
                    () -> l.acquire(KeyColumn.named("misnamed"), ""));
            assertInstanceOf(PermanentLockingException.class, e, e.toString());
        }
        try (RedisLocker l = RedisLocker.builder().node("127.0.0.2", tlsPort).tls(true).verifyHostname(false)
                .sslSocketFactory(trusting("localhost")).keyPrefix("tls:").restartGuard(Duration.ZERO).build()) {
            l.acquire(KeyColumn.named("misnamed-but-allowed"), "").close();
        }
    }
}
