package dev.locker.hbase;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.client.ConnectionConfiguration;
import org.apache.hadoop.hbase.client.RetryingCallable;
import org.apache.hadoop.hbase.client.RpcRetryingCaller;
import org.apache.hadoop.hbase.client.RpcRetryingCallerFactory;
import org.apache.hadoop.ipc.RemoteException;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.SocketTimeoutException;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * HBase's retrying callers, made to hand an interrupt that cut a call back to the calling thread. Named in a
 * connection's configuration by {@link HBaseClients}; not for use by code.
 *
 * <h2>Where the client loses an interrupt</h2>
 * A thread waiting for an RPC's answer waits in {@code BlockingRpcCallback.get}. An interrupt there clears the flag,
 * and the client throws {@code InterruptedIOException}. Single calls (a get, a check-and-mutate of one mutation) pass
 * it up to the caller. A call of several mutations goes through the batch path instead. There
 * {@code AsyncRequestFutureImpl.SingleServerRequestRunnable.run} catches it like any failure of the server. Then
 * {@code receiveGlobalFailure} and {@code resubmit} sleep with the flag clear and send the call again. The interrupt is
 * gone. A lock's grant is such a call: the claim and the fencing counter in one row operation.
 *
 * <h2>What this changes</h2>
 * Each caller sets the flag again when its call fails with an interrupt. The batch path's back-off sleep then ends at
 * once, its wait for the actions does too, and the interrupt reaches {@link HBaseErrors#translate}. Calls that must
 * finish run under {@link HBaseErrors#UNINTERRUPTIBLE}, which sees the flag and makes them again.
 *
 * <p>A region server's own InterruptedIOException (a handler stopped at shutdown) is not the caller's interrupt: it
 * leaves the flag alone, and a single call it ended is made again, as HBase's caller does for other server failures.
 *
 * <p>It adds one small object per call, and no I/O and no thread. HBase builds a factory named in the configuration
 * without the connection's client metrics. A connection that enables them loses the retrying callers' share.
 */
public final class InterruptKeepingCallers extends RpcRetryingCallerFactory {

    /** How often a call with retries is made in all while a region server's own interrupt ends it. */
    static final int CALLS_AFTER_SERVER_INTERRUPTS = 3;

    /**
     * The constructor HBase calls for a factory named in the configuration.
     *
     * @param conf           the connection's configuration
     * @param connectionConf the connection's settings read from it
     */
    public InterruptKeepingCallers(Configuration conf, ConnectionConfiguration connectionConf) {
        super(conf, connectionConf);
    }

    @Override
    public <T> RpcRetryingCaller<T> newCaller(int rpcTimeout) {
        return new Keeping<>(super.newCaller(rpcTimeout));
    }

    @Override
    public <T> RpcRetryingCaller<T> newCaller() {
        return new Keeping<>(super.newCaller());
    }

    /**
     * True for a failure caused by an interrupt of the calling thread. A socket timeout is not one. Nor is a region
     * server's own InterruptedIOException (a handler stopped at shutdown): the client rebuilds it with the server's
     * stack trace in its message, or as the cause of a {@link RemoteException}.
     */
    static boolean cutByInterrupt(IOException e) {
        return e instanceof InterruptedIOException && !(e instanceof SocketTimeoutException) && !fromServer(e);
    }

    private static boolean fromServer(Throwable e) {
        Map<Throwable, Boolean> seen = new IdentityHashMap<>();
        for (Throwable t = e; t != null && seen.put(t, Boolean.TRUE) == null; t = t.getCause()) {
            String m = t.getMessage();
            if (t instanceof RemoteException || m != null && m.contains("\tat ")) {
                return true;
            }
        }
        return false;
    }

    /** A caller that sets the interrupt flag again after a call an interrupt cut. */
    private static final class Keeping<T> implements RpcRetryingCaller<T> {
        private final RpcRetryingCaller<T> caller;

        Keeping(RpcRetryingCaller<T> caller) {
            this.caller = caller;
        }

        @Override
        public void cancel() {
            caller.cancel();
        }

        /**
         * HBase's caller stops at any InterruptedIOException, a region server's own too (a handler stopped at
         * shutdown). That one is a server failure: the call is made again, through the caller's own retries.
         */
        @Override
        public T callWithRetries(RetryingCallable<T> callable, int callTimeout) throws IOException {
            for (int call = 1; ; call++) {
                try {
                    return caller.callWithRetries(callable, callTimeout);
                } catch (IOException e) {
                    if (call < CALLS_AFTER_SERVER_INTERRUPTS && e instanceof InterruptedIOException && fromServer(e)
                            && !Thread.currentThread().isInterrupted()) {
                        continue;
                    }
                    throw kept(e);
                }
            }
        }

        @Override
        public T callWithoutRetries(RetryingCallable<T> callable, int callTimeout) throws IOException {
            try {
                return caller.callWithoutRetries(callable, callTimeout);
            } catch (IOException e) {
                throw kept(e);
            }
        }

        private static IOException kept(IOException e) {
            if (cutByInterrupt(e)) {
                Thread.currentThread().interrupt();
            }
            return e;
        }
    }
}
