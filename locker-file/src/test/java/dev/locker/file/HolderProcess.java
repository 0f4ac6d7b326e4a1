package dev.locker.file;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;

import java.nio.file.Path;
import java.time.Duration;

/** A separate JVM for {@link FileLockerTest}: takes lock {@code args[1]} in directory {@code args[0]}, says so, waits. */
public final class HolderProcess {

    private HolderProcess() {
    }

    public static void main(String[] args) throws Exception {
        try (Locker locker = FileLocker.builder(Path.of(args[0]))
                .config(LockerConfig.builder().rid("child").expiry(Duration.ofSeconds(60)).build()).build();
             Lease lease = locker.acquire(KeyColumn.named(args[1]), "held by a child process")) {
            System.out.println("HELD " + lease.fencingToken());
            System.out.flush();
            Thread.sleep(120_000);
        }
    }
}
