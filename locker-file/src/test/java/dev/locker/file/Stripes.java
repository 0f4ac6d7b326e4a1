package dev.locker.file;

import dev.locker.api.KeyColumn;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/** Which stripe guards a lock, and whether another process holds a range of a file's OS lock. */
final class Stripes {

    private Stripes() {
    }

    static int stripeOf(KeyColumn lock) {
        return LockDirectory.stripeOf(FileNames.of(lock, false));
    }

    /** The first lock named {@code prefix} and a number that falls on {@code stripe}. */
    static KeyColumn sameStripe(int stripe, String prefix) {
        for (int i = 0; ; i++) {
            KeyColumn candidate = KeyColumn.named(prefix + i);
            if (stripeOf(candidate) == stripe) {
                return candidate;
            }
        }
    }

    static Path stripeFile(Path dir, int stripe) {
        return dir.resolve(".stripes").resolve(String.format("%02x", stripe));
    }

    /** Asks python3 (POSIX lockf) whether a range of {@code file} is locked: a JVM cannot see its own locks. */
    static boolean lockedElsewhere(Path file, long start, long length) throws Exception {
        Process p = new ProcessBuilder("python3", "-c", "import fcntl,sys\nf=open(sys.argv[1],'r+')\ntry:\n"
                + " fcntl.lockf(f,fcntl.LOCK_EX|fcntl.LOCK_NB,int(sys.argv[3]),int(sys.argv[2]));print('free')\n"
                + "except OSError:\n print('held')", file.toString(), Long.toString(start), Long.toString(length))
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        p.waitFor();
        return out.equals("held");
    }
}
