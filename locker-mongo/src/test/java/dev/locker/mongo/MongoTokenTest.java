package dev.locker.mongo;

import com.mongodb.client.model.Filters;
import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.TemporaryLockingException;
import dev.locker.testkit.VirtualClock;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static dev.locker.mongo.MongoFixture.lock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Fencing tokens rise across a lock document's re-creation and mixed builds; refusals never move them. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class MongoTokenTest extends MongoScenarios {

    /**
     * A lock granted 2000 times, once a millisecond, then its document deleted (the TTL monitor, an operator). The re-
     * created document's first token is above every token the deleted one issued.
     */
    @Test
    void aRecreatedDocumentsTokenIsAboveEveryTokenOfTheDeletedOne() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        MongoLocker a = fixture.openDirect(config("a", expiry, clock).build());
        KeyColumn lock = lock("busy");
        long last = 0;
        for (int i = 0; i < 2000; i++) {
            try (Lease l = a.acquire(lock, "grant " + i)) {
                assertTrue(l.fencingToken() > last, "within one document the token rises");
                last = l.fencingToken();
            }
            clock.advance(Duration.ofMillis(1)); // one grant per millisecond: far fewer than one per microsecond
        }
        Document before = fixture.rawDoc(lock);
        // the TTL monitor (or an operator) deletes the free lock's document
        fixture.raw().deleteOne(Filters.eq("_id", lock.legible()));
        try (Lease next = a.acquire(lock, "the document re-created")) {
            assertTrue(next.fencingToken() > last, "fencing tokens must strictly increase across the deletion: the "
                    + "last token of the deleted document was " + last + " (" + before.toJson() + "), the re-created "
                    + "one's is " + next.fencingToken() + " (lower by " + (last - next.fencingToken()) + ")");
        }
    }

    /**
     * A refused acquire (a live holder: the upsert's duplicate key) changes neither seq nor tokenBase, so the
     * holder's renewal, which now compares the document's token with its own, still succeeds; and verify still agrees.
     */
    @Test
    void aRefusedAcquireDoesNotMoveTheTokenTheHoldersRenewalCompares() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        MongoLocker a = fixture.openDirect(config("a", expiry, clock).build());
        MongoLocker b = fixture.openDirect(config("b", expiry, clock).build());
        KeyColumn lock = lock("held");
        try (Lease held = a.acquire(lock, "holder")) {
            long token = held.fencingToken();
            for (int i = 0; i < 5; i++) {
                clock.advance(Duration.ofSeconds(1));
                assertThrows(TemporaryLockingException.class, () -> b.acquire(lock, "refused"));
                held.renew();
                held.check();
                assertEquals(token, held.fencingToken());
            }
        }
    }

    /**
     * Tokens stay increasing when an earlier build ({@code $setOnInsert tokenBase}) shares the collection: its
     * grants only {@code $inc seq}, ours only raise tokenBase; a document it creates carries its creation time.
     */
    @Test
    void grantsOfAnOlderBuildInterleavedKeepTokensIncreasing() {
        VirtualClock clock = new VirtualClock();
        mongo.clock().follow(clock);
        Duration expiry = Duration.ofSeconds(10);
        MongoLocker a = fixture.openDirect(config("a", expiry, clock).build());
        KeyColumn lock = lock("mixed");
        long last = 0;
        for (int i = 0; i < 20; i++) {
            if (i % 2 == 0) {
                try (Lease l = a.acquire(lock, "new build")) {
                    assertTrue(l.fencingToken() > last);
                    last = l.fencingToken();
                }
            } else { // an older build's grant: $inc seq, tokenBase untouched (the document exists)
                fixture.raw().updateOne(Filters.eq("_id", lock.legible()),
                        new Document("$inc", new Document("seq", 1L)));
                Document d = fixture.rawDoc(lock);
                long t = LockDocument.token(d);
                assertTrue(t > last);
                last = t;
                fixture.raw().updateOne(Filters.eq("_id", lock.legible()), new Document("$unset",
                        new Document("holder", "")));
            }
            clock.advance(Duration.ofSeconds(1));
        }
    }
}
