package dev.locker.file;

import dev.locker.api.TimeSource;
import dev.locker.spi.TemporaryStoreException;
import dev.locker.spi.Uninterruptible;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Collections;
import java.util.Map;
import java.util.UUID;
import java.util.WeakHashMap;

/**
 * The clock on which a lock directory's claims expire, shared by every process of the host, and the name of its
 * domain: two claims' instants are comparable only within one domain. The domain is decided by the clock behind the
 * time source (what it reads), not by which object it is: a wrapper of the system clock (metrics, tracing) is the
 * system clock.
 *
 * <ul>
 *   <li>{@code boot:<boot id>}: Linux, a time source that reads the system's monotonic clock. {@link System#nanoTime()}
 *       is the kernel's {@code CLOCK_MONOTONIC} there, the same for every process of the host, never stepped by NTP or
 *       an operator, and restarted at boot; the boot id ({@code /proc/sys/kernel/random/boot_id}) names the boot, so an
 *       instant of an earlier boot is never compared with this boot's: a claim from before a reboot is dead. A process
 *       in a time namespace ({@code unshare -T}, a restored container) reads {@code CLOCK_MONOTONIC} shifted by its
 *       namespace's offset ({@code /proc/self/timens_offsets}): instants are kept in the host's terms (the offset
 *       subtracted), so every process of the host reads one clock.</li>
 *   <li>{@code wall}: no boot id (not Linux), only when the locker was told to accept it
 *       ({@code wallClock(true)}, {@code ?wallClock=true}): the JDK promises no common origin for {@code nanoTime}
 *       across processes off Linux, so expiry is on the wall clock (epoch nanoseconds), and a wall-clock step while
 *       claims live moves their expiry (forwards: they die early, and two holders can both believe they hold the lock;
 *       backwards: late). Without that option a locker refuses to open there.</li>
 *   <li>{@code clock:<random id>}: a time source that does not read the system clock (a test's virtual clock): its
 *       own {@code nanoTime}, comparable only between lockers of this JVM that share that time source object. Another
 *       process never shares such a domain; it judges such claims only by their locker's session.</li>
 * </ul>
 */
final class HostClock {

    private static final Path BOOT_ID = Path.of("/proc/sys/kernel/random/boot_id");
    private static final Path TIMENS_OFFSETS = Path.of("/proc/self/timens_offsets");
    /** The domain of each non-system time source in use (weak: a discarded virtual clock is forgotten). */
    private static final Map<TimeSource, String> VIRTUAL = Collections.synchronizedMap(new WeakHashMap<>());

    private final TimeSource time;
    private final String domain;
    private final boolean wall;
    /** What this process's CLOCK_MONOTONIC reads ahead of the host's (its time namespace's offset), in nanoseconds. */
    private final long offset;

    /**
     * The clock of {@code time}.
     *
     * @throws IllegalStateException when the only clock available is the wall clock and {@code allowWall} is false,
     *         or when this process's time namespace offset cannot be read
     */
    HostClock(TimeSource time, boolean allowWall) {
        this(time, allowWall, bootId()); // read for each clock: a process restored from a checkpoint may be on another boot
    }

    HostClock(TimeSource time, boolean allowWall, String bootId) {
        this.time = time;
        if (!readsSystemClock(time)) {
            domain = VIRTUAL.computeIfAbsent(time, t -> "clock:" + UUID.randomUUID());
            wall = false;
            offset = 0;
        } else if (bootId != null) {
            domain = "boot:" + bootId;
            wall = false;
            offset = monotonicOffset();
        } else if (allowWall) {
            domain = "wall";
            wall = true;
            offset = 0;
        } else {
            throw new IllegalStateException("file: needs a clock that every process of the host shares and that no "
                    + "wall-clock step moves: CLOCK_MONOTONIC with a boot id (Linux). Here there is only the wall clock, "
                    + "and a forward step of it would end claims early (two holders of one lock); accept that with "
                    + "wallClock(true) on the builder or ?wallClock=true on the URI");
        }
    }

    /**
     * Fails when the boot id this clock read once no longer holds: the process was restored from a checkpoint (CRaC,
     * CRIU) on another boot. Claims written on the stale boot would be misjudged by every other process. One small read
     * of {@code /proc}. The time-namespace offset is not read again: only a new task gets another one, and a restored
     * process is a new task, which {@link Sessions#requireCurrent} tells by its start time.
     *
     * @throws IllegalStateException when the boot id read now differs
     * @throws TemporaryStoreException when the boot id cannot be read now (no descriptor left, say): not a restore
     */
    void requireCurrent() {
        if (!domain.startsWith("boot:")) {
            return;
        }
        String boot;
        try {
            boot = readBootId();
        } catch (IOException | RuntimeException e) {
            throw new TemporaryStoreException("cannot read " + BOOT_ID + " now (" + e + "): the check for a "
                    + "checkpoint restore waits for a read that works", e);
        }
        if (!domain.equals("boot:" + boot)) {
            throw new IllegalStateException(RESTORED + "the boot id is now " + boot + ", not the " + domain.substring(5)
                    + " this locker read when it opened");
        }
    }

    /** The start of every refusal of a process restored from a checkpoint. */
    static final String RESTORED = "this process was restored from a checkpoint (CRaC, CRIU) or moved since file: read "
            + "its clock, and claims written now would be misjudged by other processes: ";

    /** This clock's domain name. */
    String domain() {
        return domain;
    }

    /** The offset of this process's monotonic clock over the host's (a time namespace), in nanoseconds. */
    long offsetNanos() {
        return offset;
    }

    /** Now, in nanoseconds of this domain (for {@code boot:}, of the host's monotonic clock). */
    long now() {
        if (wall) {
            Instant t = time.now();
            return t.getEpochSecond() * 1_000_000_000L + t.getNano();
        }
        return time.nanoTime() - offset;
    }

    /** True when {@code other} is the domain of an earlier (or later) boot of this host: its instants mean nothing here. */
    boolean isOtherBoot(String other) {
        return domain.startsWith("boot:") && other.startsWith("boot:") && !other.equals(domain);
    }

    /**
     * True when {@code time} reads the system's monotonic clock: each of three readings falls between two readings of
     * {@link System#nanoTime()} taken around it (a virtual clock does not follow the system clock three times over).
     */
    static boolean readsSystemClock(TimeSource time) {
        if (time == TimeSource.system()) {
            return true;
        }
        for (int i = 0; i < 3; i++) {
            long before = System.nanoTime();
            long t = time.nanoTime();
            long after = System.nanoTime();
            if (t - before < 0 || after - t < 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * The monotonic offset of this process's time namespace ({@code monotonic <s> <ns>} in
     * {@code /proc/self/timens_offsets}); 0 on kernels without time namespaces.
     *
     * @throws IllegalStateException when the file exists but cannot be read or understood
     */
    static long monotonicOffset() {
        String text;
        try {
            text = new String(Uninterruptible.NIO.call(() -> Files.readAllBytes(TIMENS_OFFSETS)),
                    StandardCharsets.US_ASCII);
        } catch (NoSuchFileException e) {
            return 0; // a kernel without time namespaces (before 5.6, or CONFIG_TIME_NS off): one monotonic clock
        } catch (IOException | SecurityException e) {
            throw new IllegalStateException("cannot read " + TIMENS_OFFSETS + " (" + e + "): file: must know whether "
                    + "this process's monotonic clock is offset from the host's (a time namespace)", e);
        }
        for (String line : text.split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length == 3 && (f[0].equals("monotonic") || f[0].equals("1"))) {
                try {
                    return Math.addExact(Math.multiplyExact(Long.parseLong(f[1]), 1_000_000_000L), Long.parseLong(f[2]));
                } catch (NumberFormatException | ArithmeticException e) {
                    break;
                }
            }
        }
        throw new IllegalStateException("cannot understand " + TIMENS_OFFSETS + ": " + text.trim());
    }

    /**
     * This host's boot id as the kernel says it now, or null off Linux.
     *
     * @throws IllegalStateException when the file is there but cannot be read: the wall clock is no answer to that
     */
    static String bootId() {
        try {
            return readBootId();
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + BOOT_ID + " (" + e + "): file: must know this boot", e);
        }
    }

    /** The boot id, or null when there is none to read (not Linux, no {@code /proc}). */
    private static String readBootId() throws IOException {
        try {
            String id = new String(Uninterruptible.NIO.call(() -> Files.readAllBytes(BOOT_ID)),
                    StandardCharsets.US_ASCII).trim();
            return id.isEmpty() ? null : id;
        } catch (NoSuchFileException | SecurityException | UnsupportedOperationException e) {
            return null;
        }
    }
}
