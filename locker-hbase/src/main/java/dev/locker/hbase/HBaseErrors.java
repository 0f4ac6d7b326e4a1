package dev.locker.hbase;

import dev.locker.spi.PermanentStoreException;
import dev.locker.spi.StoreException;
import dev.locker.spi.TemporaryStoreException;
import dev.locker.spi.Uninterruptible;
import org.apache.hadoop.hbase.DoNotRetryIOException;
import org.apache.hadoop.hbase.TableNotEnabledException;
import org.apache.hadoop.hbase.TableNotFoundException;
import org.apache.hadoop.hbase.client.OperationTimeoutExceededException;
import org.apache.hadoop.hbase.client.RetriesExhaustedWithDetailsException;
import org.apache.hadoop.hbase.ipc.ServerTooBusyException;
import org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException;
import org.apache.hadoop.hbase.security.AccessDeniedException;

import java.io.IOException;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * Maps the HBase client's failures to the store exceptions. Permanent: a missing or disabled table or column family,
 * a refused permission, and anything HBase itself marks "do not retry" but an exhausted operation timeout or a busy
 * server (HBase marks those "do not retry" only for its own retry loop). Everything else (timeouts, refused
 * connections, regions moving or offline, servers starting or stopping) is temporary: a retry may succeed. The message
 * names the cluster and table; the HBase exception is kept as the cause.
 */
final class HBaseErrors {

    /**
     * Calls that the caller's interrupt flag cannot break. {@link #translate} sets the flag again for a call an
     * interrupt cut, so a failure with the flag set is one. Such a call is made again, as often as an interrupt cuts it:
     * each attempt ends within the operation timeout, and a failure of the server's ends the loop.
     */
    static final Uninterruptible UNINTERRUPTIBLE = Uninterruptible.retrying(Integer.MAX_VALUE,
            e -> Thread.currentThread().isInterrupted());

    private HBaseErrors() {
    }

    static StoreException translate(IOException e, String action, String where) {
        if (InterruptKeepingCallers.cutByInterrupt(e)) {
            Thread.currentThread().interrupt();
        }
        Throwable permanent = permanentCause(e);
        String detail = rootMessage(e);
        if (permanent != null) {
            return new PermanentStoreException(action + " on " + where + ": " + reason(permanent) + detail, e);
        }
        return new TemporaryStoreException(action + " on " + where + ": unavailable (cluster, region server or region "
                + "down or moving)" + detail, e);
    }

    /** True when {@code e} is (or is caused by) a failure a retry will not fix. */
    static boolean isPermanent(IOException e) {
        return permanentCause(e) != null;
    }

    private static Throwable permanentCause(Throwable e) {
        Map<Throwable, Boolean> seen = new IdentityHashMap<>();
        for (Throwable t = e; t != null && seen.put(t, Boolean.TRUE) == null; t = t.getCause()) {
            if (t instanceof RetriesExhaustedWithDetailsException) {
                for (Throwable c : ((RetriesExhaustedWithDetailsException) t).getCauses()) {
                    Throwable p = permanentCause(c);
                    if (p != null) {
                        return p;
                    }
                }
            }
            if (t instanceof TableNotFoundException || t instanceof NoSuchColumnFamilyException
                    || t instanceof AccessDeniedException || t instanceof TableNotEnabledException) {
                return t;
            }
            if (t instanceof DoNotRetryIOException && !isActuallyTemporary(t)) {
                return t;
            }
        }
        return null;
    }

    /**
     * "Do not retry" subclasses that only mean "not right now": the client ran out of its operation timeout (a slow
     * or stalled region server, whose call may still be applied later), or the server was too busy to take the call.
     */
    private static boolean isActuallyTemporary(Throwable t) {
        return t instanceof OperationTimeoutExceededException || t instanceof ServerTooBusyException;
    }

    private static String reason(Throwable t) {
        if (t instanceof TableNotFoundException) {
            return "the table does not exist";
        }
        if (t instanceof NoSuchColumnFamilyException) {
            return "a column family is missing";
        }
        if (t instanceof AccessDeniedException) {
            return "permission denied";
        }
        if (t instanceof TableNotEnabledException) {
            return "the table is disabled";
        }
        return "refused (" + t.getClass().getSimpleName() + ")";
    }

    /** " — Class: message" of the innermost cause, on one line. */
    private static String rootMessage(Throwable e) {
        Throwable root = e;
        Map<Throwable, Boolean> seen = new IdentityHashMap<>();
        while (root.getCause() != null && seen.put(root, Boolean.TRUE) == null) {
            root = root.getCause();
        }
        String m = root.getMessage();
        if (m == null) {
            return " — " + root.getClass().getSimpleName();
        }
        int nl = m.indexOf('\n');
        if (nl > 0) {
            m = m.substring(0, nl);
        }
        if (m.length() > 300) {
            m = m.substring(0, 300) + "...";
        }
        return " — " + root.getClass().getSimpleName() + ": " + m;
    }
}
