package dev.locker.shedlock;

import dev.locker.mongo.InProcessMongo;

/** ShedLock's durations outlive the holding process on MongoDB's wire protocol, served by mongo-java-server. */
class MongoLockTimesOutliveTheProcessTest extends LockTimesOutliveTheProcess {

    private InProcessMongo mongo;

    @Override
    void startBackend() {
        mongo = InProcessMongo.start();
    }

    @Override
    void stopBackend() {
        if (mongo != null) {
            mongo.close();
        }
    }

    @Override
    String uri(String options) {
        return mongo.uri() + "&" + options;
    }
}
