package dev.locker.file;

import dev.locker.spi.Uninterruptible;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Which file systems file: trusts to be local to this host, judged by the type the kernel gives the directory's mount.
 *
 * <p>An allow list, not a deny list: a file system file: does not know may be shared between hosts (most FUSE file
 * systems are). Across hosts, OS file locks do not exclude each other, and each host takes the others' claims for
 * claims of an earlier boot. So only types known to live on this host's kernel are accepted; known network types are
 * always refused; any other type is refused unless the user vouches for it ({@code trustFileSystem=true}).
 *
 * <p>On Linux the type is read from {@code /proc/self/mountinfo}: the mount the kernel reaches walking the directory's
 * real path through the mount tree (mount ids and parent ids), so a mount hidden under a later one is passed over.
 * Elsewhere, or when that file cannot be read, the JDK's {@link java.nio.file.FileStore#type()} is used.
 */
final class LocalFileSystems {

    /** How file: judges a file system type. */
    enum Kind {
        /** On this host's kernel only: its OS locks and its processes' clocks are one host's. */
        LOCAL,
        /** Shared between hosts or with a VM's host: never used. */
        SHARED,
        /** Not known to file: either way: used only when the user vouches for it. */
        UNKNOWN
    }

    private static final Path MOUNTINFO = Path.of("/proc/self/mountinfo");

    /** Disk, memory and stacked file systems of the Linux kernel, and the local ones of macOS. */
    private static final Set<String> LOCAL = Set.of("ext2", "ext3", "ext4", "xfs", "btrfs", "bcachefs", "zfs", "f2fs",
            "jfs", "reiserfs", "nilfs2", "tmpfs", "ramfs", "overlay", "ecryptfs", "vfat", "msdos", "exfat", "ntfs3",
            "hfsplus", "apfs", "hfs");

    /** Network, cluster and VM-shared file systems, also behind FUSE. */
    private static final Set<String> SHARED = Set.of("nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "9p",
            "afs", "ncpfs", "ceph", "glusterfs", "lustre", "gpfs", "beegfs", "virtiofs", "vboxsf", "vmhgfs", "prl_fs",
            "davfs", "coda", "ocfs2", "gfs2", "orangefs", "fuse.sshfs", "fuse.glusterfs", "fuse.rclone",
            "fuse.vmhgfs-fuse", "fuse.ceph-fuse", "fuse.ceph", "fuse.gcsfuse", "fuse.juicefs", "fuse.blobfuse2",
            "fuse.blobfuse", "fuse.mfs", "fuse.s3fs", "fuse.goofys", "fuse.davfs2");

    private LocalFileSystems() {
    }

    /** The kind of file system type {@code type} (as the kernel or the JDK names it, any case). */
    static Kind classify(String type) {
        String t = type.toLowerCase(Locale.ROOT);
        if (LOCAL.contains(t)) {
            return Kind.LOCAL;
        }
        if (SHARED.contains(t) || t.startsWith("nfs") || t.startsWith("fuse.s3")) {
            return Kind.SHARED;
        }
        return Kind.UNKNOWN;
    }

    /** The type of the file system that holds {@code real} (a real path: links resolved). */
    static String typeOf(Path real) throws IOException {
        try {
            String type = typeIn(Uninterruptible.NIO.call(() -> Files.readAllLines(MOUNTINFO, StandardCharsets.UTF_8)),
                    real);
            if (type != null) {
                return type;
            }
        } catch (IOException | SecurityException e) {
            // not Linux, or no /proc: the JDK's answer below
        }
        return Files.getFileStore(real).type();
    }

    /**
     * The type of the mount of {@code real} in {@code mountinfo} lines, or null when none matches. A line reads
     * {@code 36 35 98:0 /root /mount/point options [optional fields] - type source super-options}; the mount point
     * escapes space, tab, newline and backslash in octal ({@code \040}).
     *
     * <p>The path is resolved the way the kernel walks it: from the root mount, one path element at a time, entering
     * at each the mount whose parent is the mount walked so far. A mount whose parent was later covered by another
     * mount is still listed, but no walk reaches it, so it never decides the type. Of mounts sharing a parent and a
     * mount point, the later one listed is on top.
     */
    static String typeIn(List<String> mountinfo, Path real) {
        List<Mount> mounts = new ArrayList<>();
        for (String line : mountinfo) {
            String[] f = line.trim().split(" ");
            int dash = List.of(f).indexOf("-");
            if (f.length < 5 || dash < 6 || dash + 1 >= f.length) {
                continue; // not a mountinfo line
            }
            mounts.add(new Mount(f[0], f[1], unescape(f[4]), f[dash + 1]));
        }
        Mount at = root(mounts);
        if (at == null) {
            return null;
        }
        at = top(mounts, at, "/");
        String path = real.toAbsolutePath().normalize().toString();
        StringBuilder prefix = new StringBuilder();
        for (String element : path.split("/")) {
            if (element.isEmpty()) {
                continue;
            }
            prefix.append('/').append(element);
            at = top(mounts, at, prefix.toString());
        }
        return at.type;
    }

    /** One line of mountinfo: its mount id, its parent's, its mount point, its type. */
    private record Mount(String id, String parent, String point, String type) {
    }

    /** The root mount: at "/" with a parent not listed (the process's root), else the first one at "/". */
    private static Mount root(List<Mount> mounts) {
        Mount first = null;
        for (Mount m : mounts) {
            if (m.point.equals("/")) {
                if (first == null) {
                    first = m;
                }
                if (m.parent.equals(m.id) || mounts.stream().noneMatch(p -> p.id.equals(m.parent))) {
                    return m;
                }
            }
        }
        return first;
    }

    /** The mount on top at {@code point} over {@code at}: each mount on {@code point} whose parent is the one so far. */
    private static Mount top(List<Mount> mounts, Mount at, String point) {
        for (int climbs = 0; climbs < mounts.size(); climbs++) { // bounded: a malformed table may hold a cycle
            Mount next = null;
            for (Mount m : mounts) {
                if (m != at && m.parent.equals(at.id) && m.point.equals(point)) {
                    next = m; // of two on one parent and point, the later listed is on top
                }
            }
            if (next == null) {
                break;
            }
            at = next;
        }
        return at;
    }

    private static String unescape(String field) {
        if (field.indexOf('\\') < 0) {
            return field;
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && isOctal(field, i + 1)) {
                sb.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }

    private static boolean isOctal(String s, int from) {
        if (from + 3 > s.length()) {
            return false;
        }
        for (int i = from; i < from + 3; i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '7') {
                return false;
            }
        }
        return true;
    }
}
