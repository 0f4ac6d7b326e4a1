package dev.locker.springintegration;

import dev.locker.mongo.InProcessMongo;

/** The registry's Lock semantics on MongoDB's wire protocol, served in-process by mongo-java-server. */
class MongoLockRegistryTest extends LockRegistrySuite {

    private InProcessMongo mongo;

    @Override
    String startBackend() {
        mongo = InProcessMongo.start();
        return mongo.uri();
    }

    @Override
    void stopBackend() {
        if (mongo != null) {
            mongo.close();
        }
    }
}
