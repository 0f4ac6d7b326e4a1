package dev.locker.mongo;

import java.time.Duration;

/**
 * The MongoDB options a driver runs with, as {@link MongoLocker.Builder} checked them: where the lock documents live
 * and how the server's clock is judged. The connection and its concerns are {@link MongoConnections}' job.
 *
 * @param database           the database of the lock collection
 * @param collection         the lock collection
 * @param maxClockSkew       above this offset to the server's clock, expired holders are not taken over
 * @param clockCheckInterval how often the offset is measured again; zero measures only at start
 * @param ttlGrace           how long after its expiry or release the TTL index removes a lock document
 * @param serverClockSkew    how far apart the replica-set members' clocks may be
 */
record MongoOptions(String database, String collection, Duration maxClockSkew, Duration clockCheckInterval,
                    Duration ttlGrace, Duration serverClockSkew) {
}
