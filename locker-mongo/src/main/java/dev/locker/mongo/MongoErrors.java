package dev.locker.mongo;

import com.mongodb.ErrorCategory;
import com.mongodb.MongoClientException;
import com.mongodb.MongoConnectionPoolClearedException;
import com.mongodb.MongoException;
import com.mongodb.MongoExecutionTimeoutException;
import com.mongodb.MongoInterruptedException;
import com.mongodb.MongoNodeIsRecoveringException;
import com.mongodb.MongoNotPrimaryException;
import com.mongodb.MongoOperationTimeoutException;
import com.mongodb.MongoSecurityException;
import com.mongodb.MongoServerException;
import com.mongodb.MongoSocketException;
import com.mongodb.MongoSocketOpenException;
import com.mongodb.MongoTimeoutException;
import com.mongodb.MongoWriteConcernException;
import dev.locker.api.KeyColumn;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import dev.locker.spi.Uninterruptible;

import java.util.Set;

/**
 * Maps the MongoDB driver's failures to the locking exceptions: unreachable, timed out, not primary, shutting down,
 * connection pool cleared -> temporary; authentication, authorization, a closed client, anything unknown -> permanent.
 * Every message names the server and keeps the driver's exception as its cause.
 */
final class MongoErrors {

    /** Server error codes a retry (against a new primary, after a restart) can overcome. */
    private static final Set<Integer> TEMPORARY_CODES = Set.of(
            6,      // HostUnreachable
            7,      // HostNotFound
            50,     // MaxTimeMSExpired
            89,     // NetworkTimeout
            91,     // ShutdownInProgress
            189,    // PrimarySteppedDown
            262,    // ExceededTimeLimit
            9001,   // SocketException
            10107,  // NotWritablePrimary
            11600,  // InterruptedAtShutdown
            11602,  // InterruptedDueToReplStateChange
            13435,  // NotPrimaryNoSecondaryOk
            13436,  // NotPrimaryOrSecondary
            64      // WriteConcernFailed (wtimeout)
    );

    /**
     * Requests that the caller's interrupt flag cannot break. The driver fails a request cut by an interrupt with a
     * {@link MongoInterruptedException}. Such a request is sent again, as often as an interrupt cuts it: each
     * attempt ends within the driver's timeouts, and a failure of the server's ends the loop.
     */
    static final Uninterruptible UNINTERRUPTIBLE = Uninterruptible.retrying(Integer.MAX_VALUE,
            MongoInterruptedException.class::isInstance);

    private static final Set<Integer> NOT_PRIMARY_CODES = Set.of(91, 189, 10107, 11600, 11602, 13435, 13436);

    private static final Set<Integer> AUTH_CODES = Set.of(
            13,     // Unauthorized
            18      // AuthenticationFailed
    );

    private MongoErrors() {
    }

    static boolean isDuplicateKey(RuntimeException e) {
        return e instanceof MongoServerException
                && ErrorCategory.fromErrorCode(((MongoServerException) e).getCode()) == ErrorCategory.DUPLICATE_KEY;
    }

    /** True when the request may have reached the server and been applied although the call failed. */
    static boolean mayHaveBeenApplied(RuntimeException e) {
        if (e instanceof MongoOperationTimeoutException) {
            return true; // the operation's timeoutMS may have expired while waiting for the reply to a sent write
        }
        if (e instanceof MongoTimeoutException || e instanceof MongoSocketOpenException
                || e instanceof MongoSecurityException) {
            return false; // no server was selected, or the connection never opened: nothing was sent
        }
        return e instanceof MongoSocketException || e instanceof MongoWriteConcernException
                || e instanceof MongoExecutionTimeoutException || e instanceof MongoInterruptedException;
    }

    /**
     * True for a failure after which an immediate new attempt may succeed: the connection was cut (the pool is then
     * cleared and the next attempt reconnects or waits for a server), another operation's failure cleared the pool
     * this one waited on, or the primary stepped down. Not a server
     * selection timeout: that one already waited as long as we are willing to.
     */
    static boolean isQuicklyRetryable(RuntimeException e) {
        if (e instanceof MongoTimeoutException || e instanceof MongoSecurityException) {
            return false;
        }
        if (e instanceof MongoSocketException || e instanceof MongoNotPrimaryException
                || e instanceof MongoNodeIsRecoveringException || e instanceof MongoConnectionPoolClearedException) {
            return true;
        }
        return e instanceof MongoServerException && !isDuplicateKey(e)
                && NOT_PRIMARY_CODES.contains(((MongoServerException) e).getCode());
    }

    static LockingException translate(RuntimeException e, KeyColumn lock, String action, String server) {
        if (e instanceof LockingException) {
            return (LockingException) e;
        }
        String member = memberOf(e);
        String what = action + " on MongoDB " + server
                + (member != null && !server.contains(member) ? " (member " + member + ")" : "");
        if (e instanceof MongoSecurityException) {
            return new PermanentLockingException(what + " failed: authentication refused (check the user, password "
                    + "and authSource of the URI): " + e.getMessage(), lock, null, e);
        }
        if (e instanceof MongoOperationTimeoutException) { // a MongoTimeoutException, but not about selection
            return new TemporaryLockingException(what + " timed out (the URI's timeoutMS): " + e.getMessage(), lock,
                    null, e);
        }
        if (e instanceof MongoTimeoutException) {
            return new TemporaryLockingException(what + " failed: server unreachable (no suitable server within the "
                    + "server selection timeout): " + e.getMessage(), lock, null, e);
        }
        if (e instanceof MongoSocketException) {
            return new TemporaryLockingException(what + " failed: network error: " + e.getMessage(), lock, null, e);
        }
        if (e instanceof MongoConnectionPoolClearedException) { // a MongoClientException, but nothing is wrong here
            return new TemporaryLockingException(what + " failed: the connection pool was cleared after another "
                    + "operation's network error: " + e.getMessage(), lock, null, e);
        }
        if (e instanceof MongoInterruptedException) {
            return new TemporaryLockingException(what + " was interrupted: " + e.getMessage(), lock, null, e);
        }
        if (e instanceof MongoNotPrimaryException || e instanceof MongoNodeIsRecoveringException) {
            return new TemporaryLockingException(what + " failed: the server is not (or no longer) the writable "
                    + "primary: " + e.getMessage(), lock, null, e);
        }
        if (e instanceof MongoWriteConcernException) {
            return new TemporaryLockingException(what + " failed: write concern not satisfied (the write may "
                    + "linger until its claim expires): " + e.getMessage(), lock, null, e);
        }
        if (e instanceof MongoExecutionTimeoutException) {
            return new TemporaryLockingException(what + " timed out on the server: " + e.getMessage(), lock, null, e);
        }
        if (e instanceof MongoServerException) {
            int code = ((MongoServerException) e).getCode();
            if (AUTH_CODES.contains(code)) {
                return new PermanentLockingException(what + " failed: not authorized (error " + code + "): "
                        + e.getMessage(), lock, null, e);
            }
            if (TEMPORARY_CODES.contains(code)) {
                return new TemporaryLockingException(what + " failed temporarily (error " + code + "): "
                        + e.getMessage(), lock, null, e);
            }
            return new PermanentLockingException(what + " failed (error " + code + "): " + e.getMessage(), lock,
                    null, e);
        }
        if (e instanceof MongoClientException) {
            return new PermanentLockingException(what + " failed in the client: " + e.getMessage(), lock, null, e);
        }
        if (e instanceof MongoException) {
            return new PermanentLockingException(what + " failed: " + e, lock, null, e);
        }
        return null; // not the driver's: the caller falls back to the generic mapping
    }

    /** The one server of a replica set that answered (or failed to), when the driver says. */
    private static String memberOf(RuntimeException e) {
        if (e instanceof MongoServerException) {
            return String.valueOf(((MongoServerException) e).getServerAddress());
        }
        if (e instanceof MongoSocketException) {
            return String.valueOf(((MongoSocketException) e).getServerAddress());
        }
        return null;
    }
}
