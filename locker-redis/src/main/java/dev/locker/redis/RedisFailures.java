package dev.locker.redis;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockingException;
import dev.locker.api.PermanentLockingException;
import dev.locker.api.TemporaryLockingException;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;

import java.net.SocketTimeoutException;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a Jedis failure means to the caller: may the same request succeed later without anyone changing anything?
 *
 * <p>Invariant: a failure is permanent only when its cause outlives any retry: the server refused our credentials or
 * permissions, this client refused the server's certificate, or the server cannot run the request at all (one of our
 * scripts failed, another application's value of another type sits under the lock's key, scripting is disabled, a
 * Cluster node is spoken to as a single server). Everything else is temporary: an unreachable or slow server, its
 * resource limits (max clients, memory), its passing states (loading, busy with a script, failover, too few replicas)
 * and, above all, any server-side error this class does not know. A caller's bounded retry of a permanent failure
 * costs little; giving up at once on a passing state turns a blip into an outage.
 *
 * <p>Redis replies with an error code (the first word) and text. The code alone decides where it has a meaning of its
 * own; the generic {@code ERR} is read for the few texts that describe a request the server will never run.
 */
final class RedisFailures {

    /** The meaning of a failure, and how the exception that reports it is worded. */
    enum Meaning {
        /** The server refused our credentials or ACL permissions. */
        REFUSED(false),
        /** The TLS handshake failed on the server's certificate. */
        UNTRUSTED_CERTIFICATE(false),
        /** The server cannot run the request: a script error, a value of another type, scripting disabled. */
        CANNOT_RUN(false),
        /** A single-server client reached a Cluster node, which redirects some keys elsewhere, forever. */
        CLUSTER_NODE(false),
        /** The server did not answer in time; it may still have run the request. */
        TIMED_OUT(true),
        /** No connection, or it broke. */
        UNREACHABLE(true),
        /** A server-side resource limit or passing state (max clients, OOM, LOADING, BUSY, READONLY...). */
        SERVER_STATE(true),
        /** The Cluster client used up its attempts (redirections during resharding, failover, timeouts). */
        CLUSTER_ATTEMPTS(true),
        /** A server-side error this class does not know: taken as temporary. */
        UNKNOWN(true),
        /** A failure inside the client (pool exhausted, interrupted wait). */
        CLIENT(true);

        final boolean temporary;

        Meaning(boolean temporary) {
            this.temporary = temporary;
        }
    }

    /** Error codes of resource limits and passing states; they win over text that looks like a script failure. */
    private static final Set<String> PASSING_STATES = Set.of("LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN",
            "CLUSTERDOWN", "READONLY", "NOREPLICAS", "OOM", "MISCONF", "UNBLOCKED");
    private static final Set<String> REFUSALS = Set.of("NOPERM", "WRONGPASS", "NOAUTH");
    /** Codes of requests the server will not run, whatever happens meanwhile. */
    private static final Set<String> CANNOT_RUN_CODES = Set.of("WRONGTYPE", "NOSCRIPT", "EXECABORT");
    /** {@code ERR} texts of the same kind: our script failed, or the server lacks a command we need. */
    private static final Pattern CANNOT_RUN_TEXT = Pattern.compile("(?i)user_script|error compiling script"
            + "|error running script|unknown command|unknown subcommand|wrong number of arguments|syntax error"
            + "|value is not an integer|db index is out of range|invalid db index|last fencing token of this lock");
    /** Redis 6 wraps the error of a command inside a script: {@code ... @user_script: 12: -OOM command not ...}. */
    private static final Pattern NESTED_CODE = Pattern.compile(": -([A-Z]+) ");

    private RedisFailures() {
    }

    static Meaning of(JedisException e) {
        String msg = String.valueOf(e.getMessage());
        if (isAccessRefusal(e)) {
            return Meaning.REFUSED;
        }
        if (e instanceof JedisConnectionException) {
            if (isTlsRefusal(e)) {
                return Meaning.UNTRUSTED_CERTIFICATE;
            }
            return isTimeout(e) ? Meaning.TIMED_OUT : Meaning.UNREACHABLE;
        }
        if (e instanceof JedisClusterOperationException) {
            return Meaning.CLUSTER_ATTEMPTS;
        }
        if (e instanceof JedisDataException) {
            return ofServerError(msg);
        }
        return Meaning.CLIENT;
    }

    /** The meaning of an error reply, {@code "CODE text"}. */
    static Meaning ofServerError(String reply) {
        String code = code(reply);
        Matcher nested = NESTED_CODE.matcher(reply);
        if (PASSING_STATES.contains(code) || (nested.find() && PASSING_STATES.contains(nested.group(1)))) {
            return Meaning.SERVER_STATE;
        }
        // CROSSSLOT: only a Cluster node says it (the acquire's keys share a slot in Cluster mode, where the client
        // routes them; a single-server locker's marker key does not), so it means a Cluster node used as one server
        if (code.equals("MOVED") || code.equals("ASK") || code.equals("CROSSSLOT")) {
            return Meaning.CLUSTER_NODE;
        }
        if (CANNOT_RUN_CODES.contains(code) || (code.equals("ERR") && CANNOT_RUN_TEXT.matcher(reply).find())) {
            return Meaning.CANNOT_RUN;
        }
        if (reply.toLowerCase(Locale.ROOT).contains("max number of clients")) {
            return Meaning.SERVER_STATE; // reported with the generic ERR code
        }
        return Meaning.UNKNOWN;
    }

    /** Maps a Jedis failure to the exception hierarchy by its meaning; the message names the server. */
    static LockingException classify(JedisException e, KeyColumn lock, String action, String server) {
        String msg = String.valueOf(e.getMessage());
        Meaning m = of(e);
        String text = switch (m) {
            case REFUSED -> action + " was refused by " + server + ": " + refusal(e) + ": " + msg;
            case UNTRUSTED_CERTIFICATE -> action + ": the TLS handshake with " + server + " failed (server "
                    + "certificate not trusted or not issued for this host): " + msg;
            case CANNOT_RUN -> action + " failed on " + server + ", which cannot run the request (a script error, "
                    + "a value of another type under the lock's key, or scripting disabled): " + msg;
            case CLUSTER_NODE -> action + " was turned away by " + server + ", a Redis Cluster node (which answers "
                    + "MOVED or CROSSSLOT to a single-server client): use cluster mode (several seed nodes, or "
                    + "cluster=true): " + msg;
            case TIMED_OUT -> action + " timed out (" + server + "): " + msg;
            case UNREACHABLE -> action + " could not reach the server (" + server + "): " + msg;
            case SERVER_STATE -> action + " failed temporarily on " + server + " (a server-side limit or passing "
                    + "state): " + msg;
            case CLUSTER_ATTEMPTS -> action + " failed on " + server + " after the cluster client's attempts: " + msg;
            case UNKNOWN -> action + " failed on " + server + " with an error this library does not know, taken as "
                    + "temporary: " + msg;
            case CLIENT -> action + " failed on " + server + ": " + msg;
        };
        return m.temporary
                ? new TemporaryLockingException(text, lock, null, e)
                : new PermanentLockingException(text, lock, null, e);
    }

    /** Which refusal it is, and what fixes it: a missing password, a wrong one, or missing ACL permissions. */
    private static String refusal(JedisException e) {
        String codes = "";
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            codes += " " + code(String.valueOf(t.getMessage()));
        }
        if (codes.contains(" NOAUTH")) {
            return "the server requires a password and none was given (put it in the URI, "
                    + "redis://:PASSWORD@host:port or redis://USER:PASSWORD@host:port for an ACL user, "
                    + "or in the builder's user/password)";
        }
        if (codes.contains(" WRONGPASS")) {
            return "the user name or password is wrong, or the ACL user is disabled (check the URI's user info "
                    + "or the builder's user/password)";
        }
        return "the ACL user lacks a permission on a key, channel or command (docs/backends/redis.md gives a "
                + "least-privilege ACL for the lock prefix)";
    }

    /** True when a socket read or connect timed out somewhere in the chain. */
    static boolean isTimeout(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SocketTimeoutException) {
                return true;
            }
        }
        return false;
    }

    /** The error code: the reply's first word when it is upper-case letters, else the empty string. */
    private static String code(String reply) {
        int end = 0;
        while (end < reply.length() && reply.charAt(end) >= 'A' && reply.charAt(end) <= 'Z') {
            end++;
        }
        return end < reply.length() && reply.charAt(end) != ' ' ? "" : reply.substring(0, end);
    }

    private static boolean isAccessRefusal(JedisException e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof JedisAccessControlException) {
                return true;
            }
            if (t instanceof JedisDataException) {
                String msg = String.valueOf(t.getMessage());
                if (REFUSALS.contains(code(msg)) || isScriptAclRefusal(msg)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Inside a script, Redis 7 reports a refused command or key as a plain ERR. */
    private static boolean isScriptAclRefusal(String msg) {
        String m = msg.toLowerCase(Locale.ROOT);
        return m.contains("can't run this command") || m.contains("no permissions to access");
    }

    /** A certificate the client refuses will be refused again: not worth a retry. */
    private static boolean isTlsRefusal(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof java.security.cert.CertificateException
                    || t instanceof javax.net.ssl.SSLPeerUnverifiedException
                    || (t instanceof javax.net.ssl.SSLHandshakeException && String.valueOf(t.getMessage())
                    .matches("(?is).*(certif|PKIX|subject alternative|hostname).*"))) {
                return true;
            }
        }
        return false;
    }
}
