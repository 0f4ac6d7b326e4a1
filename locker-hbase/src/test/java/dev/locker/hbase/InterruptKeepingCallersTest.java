package dev.locker.hbase;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.client.ConnectionConfiguration;
import org.apache.hadoop.hbase.client.RetryingCallable;
import org.apache.hadoop.hbase.client.RpcRetryingCaller;
import org.apache.hadoop.ipc.RemoteException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.SocketTimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The retrying callers set the interrupt flag again after a call an interrupt cut, and only then. */
class InterruptKeepingCallersTest {

    private final InterruptKeepingCallers factory = new InterruptKeepingCallers(new Configuration(false),
            new ConnectionConfiguration() { }); // HBase's settings for tests: no retries, no pauses

    @AfterEach
    void clearFlag() {
        Thread.interrupted();
    }

    @Test
    void aCallCutByAnInterruptFailsWithTheFlagSetAgain() {
        InterruptedIOException cut = new InterruptedIOException("interrupted while waiting for the answer");
        RpcRetryingCaller<String> caller = factory.newCaller();
        assertSame(cut, assertThrows(InterruptedIOException.class, () -> caller.callWithoutRetries(failing(cut), 1000)));
        assertTrue(Thread.interrupted(), "the flag is set again after a call without retries");
        assertSame(cut, assertThrows(InterruptedIOException.class, () -> caller.callWithRetries(failing(cut), 1000)));
        assertTrue(Thread.interrupted(), "the flag is set again after a call with retries");
    }

    @Test
    void aSocketTimeoutIsNoInterrupt() {
        RpcRetryingCaller<String> caller = factory.newCaller(1000);
        assertThrows(SocketTimeoutException.class,
                () -> caller.callWithoutRetries(failing(new SocketTimeoutException("no answer in time")), 1000));
        assertFalse(Thread.interrupted(), "a timeout leaves the flag clear");
    }

    @Test
    void aRegionServersOwnInterruptedIOExceptionLeavesTheFlagClear() {
        RpcRetryingCaller<String> caller = factory.newCaller();
        // a batch call's failure: rebuilt from the server's class name and its stack trace as the message
        InterruptedIOException inBatch = new InterruptedIOException("java.io.InterruptedIOException: handler stopped"
                + "\n\tat org.apache.hadoop.hbase.regionserver.HRegion.checkAndMutate(HRegion.java:1)");
        assertThrows(InterruptedIOException.class, () -> caller.callWithoutRetries(failing(inBatch), 1000));
        assertFalse(Thread.interrupted(), "a server's interrupt in a batch call is not the caller's");
        // a single call's failure: unwrapped from the server's RemoteException, which stays its cause
        InterruptedIOException single = new InterruptedIOException("handler stopped");
        single.initCause(new RemoteException(InterruptedIOException.class.getName(), "handler stopped"));
        assertThrows(InterruptedIOException.class, () -> caller.callWithoutRetries(failing(single), 1000));
        assertFalse(Thread.interrupted(), "a server's interrupt in a single call is not the caller's");
    }

    @Test
    void aCallWithRetriesThatARegionServersInterruptEndedIsMadeAgain() throws IOException {
        RpcRetryingCaller<String> caller = factory.newCaller();
        InterruptedIOException stopped = new InterruptedIOException("handler stopped");
        stopped.initCause(new RemoteException(InterruptedIOException.class.getName(), "handler stopped"));
        int[] calls = {0};
        RetryingCallable<String> failingOnce = new Callable() {
            @Override
            public String call(int callTimeout) throws IOException {
                if (calls[0]++ == 0) {
                    throw stopped;
                }
                return "answer";
            }
        };
        assertEquals("answer", caller.callWithRetries(failingOnce, 1000));
        assertEquals(2, calls[0], "made again once");
        assertFalse(Thread.interrupted(), "nothing interrupted the caller");
    }

    @Test
    void aCallThatAnswersLeavesTheFlagAsItWas() throws IOException {
        RpcRetryingCaller<String> caller = factory.newCaller();
        assertEquals("answer", caller.callWithoutRetries(answering(), 1000));
        assertFalse(Thread.interrupted(), "nothing interrupted the call");
    }

    private static RetryingCallable<String> failing(IOException e) {
        return new Callable() {
            @Override
            public String call(int callTimeout) throws IOException {
                throw e;
            }
        };
    }

    private static RetryingCallable<String> answering() {
        return new Callable() {
            @Override
            public String call(int callTimeout) {
                return "answer";
            }
        };
    }

    /** A callable that needs no server: only its answer or failure matters here. */
    private abstract static class Callable implements RetryingCallable<String> {
        @Override
        public void prepare(boolean reload) {
        }

        @Override
        public void throwable(Throwable t, boolean retrying) {
        }

        @Override
        public String getExceptionMessageAdditionalDetail() {
            return "";
        }

        @Override
        public long sleep(long pause, int tries) {
            return 0;
        }
    }
}
