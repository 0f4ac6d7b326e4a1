package dev.locker.mongo;

import dev.locker.spi.DeploymentCheck;
import dev.locker.spi.DeploymentCheck.Finding;
import dev.locker.spi.DeploymentCheck.Level;
import dev.locker.api.Locker;
import dev.locker.api.Lockers;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.mongodb.WriteConcern;
import org.bson.Document;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
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

    @Test
    void aMalformedMaxClockSkewIsRefusedBeforeAnyIoNamingTheOption() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new MongoDoctor().check("mongodb://127.0.0.1:1/?lockerMaxClockSkewMS=10s", s -> { }));
        assertTrue(e.getMessage().contains("lockerMaxClockSkewMS"), e::getMessage);
    }

    @Test
    void onAStandaloneAGrantMustBeJournaledBeforeItIsAcknowledged() {
        // w=1 without j: acknowledged from memory, lost in a crash (the live check, on the in-process server)
        assertEquals(Level.FAIL, find(new MongoDoctor().check(mongo.uri() + "&w=1", s -> { }), "write-concern").level());
        MongoDoctor.Topology standalone = MongoDoctor.Topology.STANDALONE;
        assertEquals(Level.FAIL, MongoDoctor.writeConcern(WriteConcern.W1, standalone).level());
        assertEquals(Level.OK, MongoDoctor.writeConcern(WriteConcern.W1.withJournal(true), standalone).level());
        assertEquals(Level.OK, MongoDoctor.writeConcern(WriteConcern.MAJORITY, standalone).level(),
                "w=majority on a standalone waits for the journal");
        assertEquals(Level.FAIL, MongoDoctor.writeConcern(WriteConcern.MAJORITY.withJournal(false), standalone)
                .level());
        assertEquals(Level.FAIL, MongoDoctor.writeConcern(WriteConcern.W2.withJournal(true), standalone).level(),
                "a standalone refuses w=2");
        assertEquals(Level.FAIL, MongoDoctor.writeConcern(WriteConcern.UNACKNOWLEDGED, standalone).level());
        assertTrue(MongoDoctor.writeConcern(WriteConcern.W1, standalone).fix().contains("journal=true"));
    }

    private static Document hello(int hosts, int passives, int arbiters) {
        Document d = new Document("setName", "rs0");
        d.put("hosts", names("h", hosts));
        d.put("passives", names("p", passives));
        d.put("arbiters", names("a", arbiters));
        return d;
    }

    private static List<String> names(String prefix, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(prefix + i + ":27017");
        }
        return out;
    }

    private static Document config(Boolean journalDefault, int... votes) {
        List<Document> members = new ArrayList<>();
        for (int v : votes) {
            members.add(new Document("host", "m" + members.size()).append("votes", v));
        }
        Document c = new Document("members", members);
        if (journalDefault != null) {
            c.put("writeConcernMajorityJournalDefault", journalDefault);
        }
        return c;
    }

    private static Level judge(WriteConcern wc, Document hello, Document config) {
        return MongoDoctor.writeConcern(wc, MongoDoctor.Topology.of(hello, config)).level();
    }

    @Test
    void aNumericWriteConcernIsAMajorityOnlyOfTheSetItIsJudgedAgainst() {
        WriteConcern w2 = new WriteConcern(2).withJournal(true);
        WriteConcern w3 = new WriteConcern(3).withJournal(true);
        // 5 voting members: w=2 is not a majority (a failover can elect one of the 3 without the grant)
        assertEquals(Level.FAIL, judge(w2, hello(5, 0, 0), config(null, 1, 1, 1, 1, 1)));
        assertEquals(Level.FAIL, judge(w2, hello(5, 0, 0), null), "hello alone shows w=2 < 3 of 5 too");
        assertEquals(Level.OK, judge(w3, hello(5, 0, 0), config(null, 1, 1, 1, 1, 1)));
        // without the configuration, hidden voters may exist: a w that looks like a majority cannot be confirmed
        assertEquals(Level.WARN, judge(w3, hello(5, 0, 0), null));
        // 3 members: w=2 is a majority
        assertEquals(Level.OK, judge(w2, hello(3, 0, 0), config(true, 1, 1, 1)));
        // 3 voters and 2 non-voting members: 2 acknowledgements may come from the non-voting ones
        assertEquals(Level.FAIL, judge(w3, hello(3, 2, 0), config(null, 1, 1, 1, 0, 0)));
        assertEquals(Level.OK, judge(new WriteConcern(4).withJournal(true), hello(3, 2, 0),
                config(null, 1, 1, 1, 0, 0)));
        // a primary, a secondary, an arbiter: the arbiter votes but holds no data, so a majority needs both
        Document psa = new Document("members", List.of(new Document("votes", 1), new Document("votes", 1),
                new Document("votes", 1).append("arbiterOnly", true)));
        assertEquals(Level.OK, judge(w2, hello(2, 0, 1), psa));
        assertEquals(Level.FAIL, judge(WriteConcern.W1.withJournal(true), hello(2, 0, 1), psa));
        // unset w on a replica set may be the server's w=1
        assertEquals(Level.FAIL, judge(WriteConcern.ACKNOWLEDGED.withJournal(true), hello(3, 0, 0), null));
        // a tag set cannot be judged here
        assertEquals(Level.WARN, judge(new WriteConcern("dcs").withJournal(true), hello(3, 0, 0), null));
    }

    @Test
    void onAReplicaSetAGrantMustBeJournaledToo() {
        Document five = config(null, 1, 1, 1, 1, 1);
        assertEquals(Level.OK, judge(WriteConcern.MAJORITY, hello(5, 0, 0), five),
                "writeConcernMajorityJournalDefault is true unless configured otherwise");
        assertEquals(Level.FAIL, judge(WriteConcern.MAJORITY, hello(5, 0, 0), config(false, 1, 1, 1, 1, 1)));
        assertEquals(Level.OK, judge(WriteConcern.MAJORITY.withJournal(true), hello(5, 0, 0),
                config(false, 1, 1, 1, 1, 1)));
        assertEquals(Level.WARN, judge(WriteConcern.MAJORITY, hello(5, 0, 0), null),
                "the journal default could not be read");
        assertEquals(Level.OK, judge(WriteConcern.MAJORITY.withJournal(true), hello(5, 0, 0), null));
        assertEquals(Level.FAIL, judge(new WriteConcern(3), hello(5, 0, 0), five),
                "a numeric w is acknowledged from memory without j=true");
        assertEquals(Level.FAIL, judge(WriteConcern.MAJORITY.withJournal(false), hello(5, 0, 0), five));
    }
}
