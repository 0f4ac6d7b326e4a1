/**
 * The MongoDB backend ({@code mongodb://}, {@code mongodb+srv://}): one document per lock, decided by one atomic
 * {@code findOneAndUpdate}, through mongodb-driver-sync.
 *
 * <p>Start with {@link dev.locker.mongo.MongoLocker}: its class comment is the safety argument, and its builder
 * takes an existing {@code MongoClient}.
 *
 * <p>Laid out like every backend: the locker ({@code MongoLocker}), its driver ({@code MongoDriver}), the options
 * ({@code MongoOptions}), the connections ({@code MongoConnections}), the errors ({@code MongoErrors}), the doctor
 * ({@code MongoDoctor}) and the provider ({@code MongoLockerProvider}). The driver's own parts sit beside it: the lock
 * document, the server's clock, the listing, the records and the take-backs.
 */
package dev.locker.mongo;
