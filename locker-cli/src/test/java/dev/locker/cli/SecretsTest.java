package dev.locker.cli;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

class SecretsTest {

    @Test
    void passwordsInUserInfoAndOptionsAreMasked() {
        assertEquals("redis://locker:***@10.0.0.5:6379/2?prefix=app:",
                Secrets.mask("redis://locker:pw%40x@10.0.0.5:6379/2?prefix=app:"));
        assertEquals("rediss://h:6379?truststore=/t.p12&truststorePassword=***&password=***&timeout=2s",
                Secrets.mask("rediss://h:6379?truststore=/t.p12&truststorePassword=abc&password=def&timeout=2s"));
        assertEquals("mongodb://u:***@db1,db2/?replicaSet=rs0", Secrets.mask("mongodb://u:hunter2@db1,db2/?replicaSet=rs0"));
        assertEquals("redis://localhost:6379", Secrets.mask("redis://localhost:6379"));
    }

    @Test
    void aSecretIsScrubbedFromAnyTextRawOrDecoded() {
        Secrets s = new Secrets("redis://locker:pw%40xyz@h:1?keystorePassword=k3ystore");
        String text = s.scrub("AUTH failed for pw%40xyz / pw@xyz; keystore k3ystore unreadable");
        assertFalse(text.contains("pw%40xyz") || text.contains("pw@xyz") || text.contains("k3ystore"), text);
    }
}
