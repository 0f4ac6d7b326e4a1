/**
 * The MongoDB backend ({@code mongodb://}, {@code mongodb+srv://}): one document per lock, decided by one atomic
 * {@code findOneAndUpdate}, through mongodb-driver-sync.
 *
 * <p>Start with {@link dev.locker.mongo.MongoLocker}: its class comment is the safety argument, and its builder
 * takes an existing {@code MongoClient}.
 */
package dev.locker.mongo;
