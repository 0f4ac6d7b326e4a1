package dev.locker.mongo;

import com.mongodb.MongoClientSettings;
import dev.locker.spi.DeploymentCheck.Finding;
import dev.locker.spi.DeploymentCheck.Level;
import org.bson.Document;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The doctor's server-clocks check reads every member's wall clock and judges their spread against
 * lockerServerClockSkewMS; two in-process servers, the second's clock set off, play the members.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MongoDoctorServerClocksTest {

    private static final Duration OFF = Duration.ofSeconds(3);

    private InProcessMongo first;
    private InProcessMongo second;

    @BeforeAll
    void start() {
        first = InProcessMongo.start();
        second = InProcessMongo.start();
    }

    @AfterAll
    void stop() {
        first.close();
        second.close();
    }

    /**
     * The URI's settings, with Locker's server selection timeout of 3 s: short for a member that does not answer,
     * long enough for one that answers on a loaded 2-core machine.
     */
    private static MongoClientSettings settings() {
        return MongoClientSettings.builder()
                .applyToClusterSettings(c -> c.serverSelectionTimeout(3, TimeUnit.SECONDS)).build();
    }

    private Finding judge(Duration secondOff, Duration skew, String... members) {
        second.clock().offset(secondOff);
        return MongoDoctor.serverClocks(List.of(members), settings(), skew);
    }

    private static Finding find(List<Finding> findings, String check) {
        return findings.stream().filter(f -> f.check().equals(check)).findFirst()
                .orElseThrow(() -> new AssertionError("no " + check + " in " + findings));
    }

    @Test
    void aStandaloneServerHasOneClock() {
        List<Finding> findings = new MongoDoctor().check(first.uri(), s -> { });
        Finding clocks = find(findings, "server-clocks");
        assertEquals(Level.OK, clocks.level(), clocks::toString);
        assertTrue(clocks.why().contains("one clock judges every claim"), clocks::toString);
    }

    @Test
    void membersFurtherApartThanTheBoundFail() {
        Finding f = judge(OFF, Duration.ofSeconds(1), first.address(), second.address());
        assertEquals(Level.FAIL, f.level(), f::toString);
        assertTrue(f.why().startsWith("2 member clock(s) read, ") && f.why().contains(" ms apart (± "),
                f::toString);
        assertTrue(f.why().contains("lockerServerClockSkewMS=1000"), f::toString);
        assertTrue(f.fix().contains("NTP") && f.fix().contains("raise lockerServerClockSkewMS"), f::toString);
    }

    @Test
    void membersWithinTheBoundButNearItWarn() {
        Finding f = judge(OFF, Duration.ofSeconds(5), first.address(), second.address());
        assertEquals(Level.WARN, f.level(), f::toString);
        assertTrue(f.why().contains("by less than half of it"), f::toString);
    }

    @Test
    void membersWellWithinTheBoundAreOk() {
        Finding f = judge(OFF, Duration.ofSeconds(30), first.address(), second.address());
        assertEquals(Level.OK, f.level(), f::toString);
        assertTrue(f.why().contains("within half the bound"), f::toString);
    }

    @Test
    void aMemberThatCannotBeReadWarnsNamingIt() {
        Finding f = judge(Duration.ZERO, Duration.ofSeconds(30), first.address(), "127.0.0.1:1");
        assertEquals(Level.WARN, f.level(), f::toString);
        assertTrue(f.why().contains("not read: [127.0.0.1:1]"), f::toString);
    }

    @Test
    void severalMembersWithABoundOfZeroWarn() {
        Finding f = judge(Duration.ZERO, Duration.ZERO, first.address(), second.address());
        assertEquals(Level.WARN, f.level(), f::toString);
        assertTrue(f.fix().contains("set lockerServerClockSkewMS"), f::toString);
    }

    @Test
    void theMembersAreTheHostsAndPassivesHelloLists() {
        Document hello = new Document("setName", "rs0").append("hosts", List.of("h0:27017", "h1:27017"))
                .append("passives", List.of("p0:27017")).append("arbiters", List.of("a0:27017"));
        assertEquals(List.of("h0:27017", "h1:27017", "p0:27017"), MongoDoctor.members(hello));
        assertEquals(List.of(), MongoDoctor.members(new Document("ismaster", true)));
    }

    @Test
    void aBoundNotUnderHalfTheExpiryIsRefusedBeforeAnyIo() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new MongoDoctor()
                .check("mongodb://127.0.0.1:1/?expiry=10s&lockerServerClockSkewMS=5000", s -> { }));
        assertTrue(e.getMessage().contains("serverClockSkew PT5S must be less than half the expiry PT10S"),
                e::getMessage);
    }
}
