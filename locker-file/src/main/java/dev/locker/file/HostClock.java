package dev.locker.file;

import dev.locker.api.TimeSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;

/**
 * The clock on which a lock directory's claims expire, shared by every process of the host, and the name of its
 * domain: two claims' instants are comparable only within one domain.
 *
 * <ul>
 *   <li>{@code boot:<boot id>}: Linux with the system time source. {@link System#nanoTime()} is the kernel's
 *       {@code CLOCK_MONOTONIC} there, the same for every process of the host, never stepped by NTP or an operator,
 *       and restarted at boot; the boot id ({@code /proc/sys/kernel/random/boot_id}) names the boot, so an instant of
 *       an earlier boot is never compared with this boot's: a claim from before a reboot is dead.</li>
 *   <li>{@code wall}: elsewhere with the system time source. The JDK promises no common origin for
 *       {@code nanoTime} across processes off Linux, so expiry is on the wall clock (epoch nanoseconds): a wall-clock
 *       step while claims live moves their expiry (forwards: they die early; backwards: late).</li>
 *   <li>{@code clock:<id>}: any other time source (a test's virtual clock): its own {@code nanoTime}, comparable only
 *       between lockers that share that time source object.</li>
 * </ul>
 */
final class HostClock {

    private static final Path BOOT_ID = Path.of("/proc/sys/kernel/random/boot_id");
    private static final String BOOT = bootId();

    private final TimeSource time;
    private final String domain;
    private final boolean wall;

    HostClock(TimeSource time) {
        this.time = time;
        if (time != TimeSource.system()) {
            domain = "clock:" + Integer.toHexString(System.identityHashCode(time));
            wall = false;
        } else if (BOOT != null) {
            domain = "boot:" + BOOT;
            wall = false;
        } else {
            domain = "wall";
            wall = true;
        }
    }

    /** This clock's domain name. */
    String domain() {
        return domain;
    }

    /** Now, in nanoseconds of this domain. */
    long now() {
        if (wall) {
            Instant t = time.now();
            return t.getEpochSecond() * 1_000_000_000L + t.getNano();
        }
        return time.nanoTime();
    }

    /** True when {@code other} is the domain of an earlier (or later) boot of this host: its instants mean nothing here. */
    boolean isOtherBoot(String other) {
        return domain.startsWith("boot:") && other.startsWith("boot:") && !other.equals(domain);
    }

    private static String bootId() {
        try {
            String id = new String(Files.readAllBytes(BOOT_ID), StandardCharsets.US_ASCII).trim();
            return id.isEmpty() ? null : id;
        } catch (IOException | SecurityException | UnsupportedOperationException e) {
            return null;
        }
    }
}
