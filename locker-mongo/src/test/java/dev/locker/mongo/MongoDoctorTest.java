package dev.locker.mongo;

import dev.locker.spi.DeploymentCheck;
import dev.locker.spi.DeploymentCheck.Finding;
import dev.locker.spi.DeploymentCheck.Level;
import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The mongodb:// deployment checks against the in-process MongoDB server, whose clock can be set off. */
class MongoDoctorTest {

    private InProcessMongo mongo;

    @BeforeEach
    void start() {
        mongo = InProcessMongo.start();
    }

    @AfterEach
    void stop() {
        mongo.close();
    }

    private static Finding find(List<Finding> findings, String check) {
        return findings.stream().filter(f -> f.check().equals(check)).findFirst()
                .orElseThrow(() -> new AssertionError("no " + check + " in " + findings));
    }

    @Test
    void isFoundByItsSchemeAndReportsConcernsClockAndTheTtlIndexOnceALockerCreatedIt() {
        DeploymentCheck check = DeploymentCheck.forScheme("mongodb").orElseThrow();
        String uri = mongo.uri() + "&lockerCollection=doctor";
        List<Finding> before = check.check(uri, s -> { });
        assertEquals(Level.OK, find(before, "write-concern").level(), before::toString);
        assertTrue(find(before, "clock").level() != Level.FAIL, before::toString); // a slow round trip may WARN
        assertTrue(find(before, "ttl-index").why().contains("does not exist yet"), before::toString);
        assertEquals(Level.WARN, find(before, "server").level(), "standalone: " + before);
        try (Locker locker = Lockers.open(uri)) {
            locker.holder(dev.locker.api.KeyColumn.named("x"));
        }
        List<Finding> after = check.check(uri, s -> { });
        assertEquals(Level.OK, find(after, "ttl-index").level(), after::toString);
    }

    @Test
    void aClockFurtherOffThanTheAllowedSkewFails() {
        mongo.clock().offset(Duration.ofSeconds(30));
        List<Finding> findings = new MongoDoctor().check(mongo.uri(), s -> { });
        Finding clock = find(findings, "clock");
        assertEquals(Level.FAIL, clock.level(), findings::toString);
        assertTrue(clock.why().contains("lockerMaxClockSkewMS=10000"), clock::toString);
    }
}
