package dev.locker.faults;

import java.io.IOException;

/** POSIX signals to one process by its pid (never by name): SIGKILL, SIGSTOP, SIGCONT. */
final class Signals {

    private Signals() {
    }

    static void kill(long pid) {
        ProcessHandle.of(pid).ifPresent(h -> {
            h.destroyForcibly(); // SIGKILL on Linux
            h.onExit().join();
        });
    }

    static void stop(long pid) {
        send("-STOP", pid);
    }

    static void cont(long pid) {
        send("-CONT", pid);
    }

    private static void send(String signal, long pid) {
        try {
            Process p = new ProcessBuilder("kill", signal, Long.toString(pid)).redirectErrorStream(true).start();
            int rc = p.waitFor();
            if (rc != 0) {
                throw new IllegalStateException("kill " + signal + " " + pid + " failed (exit " + rc + "): "
                        + new String(p.getInputStream().readAllBytes()).trim());
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot run kill " + signal + " " + pid, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while signalling " + pid, e);
        }
    }
}
