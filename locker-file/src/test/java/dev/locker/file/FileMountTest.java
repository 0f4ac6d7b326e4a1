package dev.locker.file;

import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** file: accepts only file systems known to be local to this host, read from the mount table, unless trusted. */
class FileMountTest {

    /** Lines as /proc/self/mountinfo has them, from a host with FUSE mounts, a bind mount and a stacked mount. */
    private static final List<String> MOUNTINFO = List.of(
            "26 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro",
            "31 26 0:27 / /tmp rw,nosuid,nodev shared:13 - tmpfs tmpfs rw,size=8G",
            "40 26 0:35 / /mnt/vmshare rw,relatime shared:20 - fuse.vmhgfs-fuse vmhgfs-fuse rw,user_id=0",
            "41 26 0:36 / /mnt/ceph rw,relatime shared:21 - fuse.ceph-fuse ceph-fuse rw,user_id=0",
            "42 26 0:37 / /mnt/gcs rw,relatime shared:22 - fuse.gcsfuse bucket rw,user_id=1000",
            "43 26 0:38 / /mnt/jfs rw,relatime shared:23 - fuse.juicefs redis://meta rw,user_id=0",
            "44 26 0:39 / /mnt/blob rw,relatime shared:24 - fuse.blobfuse2 blobfuse2 rw,user_id=0",
            "45 26 0:40 / /mnt/moose rw,relatime shared:25 - fuse.mfs mfsmaster:9421 rw,user_id=0",
            "46 26 0:41 / /mnt/odd rw,relatime shared:26 - fuse.someonesfs somefs rw,user_id=0",
            "47 26 0:42 / /srv/nfs rw,relatime shared:27 - nfs4 nas:/export rw,vers=4.2",
            "48 47 259:3 / /srv/nfs/local rw,relatime shared:28 - xfs /dev/nvme1n1 rw",
            "49 26 0:43 / /mnt/with\\040space rw,relatime shared:29 - btrfs /dev/sdb rw",
            "50 26 0:44 / /var/lib/docker/overlay2/x/merged rw,relatime - overlay overlay rw,lowerdir=/a",
            "51 26 0:45 / /mnt/moose rw,relatime shared:30 - zfs tank/moose rw");

    private static String type(String path) {
        return LocalFileSystems.typeIn(MOUNTINFO, Path.of(path));
    }

    @Test
    void theTypeIsTheMountWithTheLongestMountPointOverThePathTheLastOneOnTop() {
        assertEquals("ext4", type("/var/lib/locks"));
        assertEquals("tmpfs", type("/tmp/locks"));
        assertEquals("ext4", type("/tmpfoo/locks"), "a mount point is a whole path element");
        assertEquals("fuse.juicefs", type("/mnt/jfs/app/locks"));
        assertEquals("nfs4", type("/srv/nfs/shared"));
        assertEquals("xfs", type("/srv/nfs/local/locks"), "a local mount inside an NFS mount is local");
        assertEquals("btrfs", type("/mnt/with space/locks"), "\\040 in a mount point is a space");
        assertEquals("zfs", type("/mnt/moose/locks"), "of two mounts on one point, the later is on top");
        assertEquals("overlay", type("/var/lib/docker/overlay2/x/merged/locks"));
        assertNull(LocalFileSystems.typeIn(List.of("not a mountinfo line"), Path.of("/x")));
    }

    @Test
    void sharedFuseFileSystemsAreRefusedAndUnknownOnesUnlessTrusted() {
        for (String shared : List.of("fuse.vmhgfs-fuse", "fuse.ceph-fuse", "fuse.gcsfuse", "fuse.juicefs",
                "fuse.blobfuse2", "fuse.mfs", "nfs4", "cifs", "9p", "virtiofs", "fuse.sshfs")) {
            assertEquals(LocalFileSystems.Kind.SHARED, LocalFileSystems.classify(shared), shared);
            String refusal = LockDirectory.refusal(Path.of("/mnt/x"), shared, true);
            assertTrue(refusal != null && refusal.contains("shared between hosts"), "refused even when trusted: "
                    + refusal);
        }
        for (String local : List.of("ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "zfs", "f2fs", "overlay", "EXT4")) {
            assertEquals(LocalFileSystems.Kind.LOCAL, LocalFileSystems.classify(local), local);
            assertNull(LockDirectory.refusal(Path.of("/var/lib/x"), local, false), local);
        }
        String unknown = LockDirectory.refusal(Path.of("/mnt/odd"), type("/mnt/odd/locks"), false);
        assertTrue(unknown != null && unknown.contains("'fuse.someonesfs'") && unknown.contains("trustFileSystem=true"),
                "an unknown type is refused, naming the override: " + unknown);
        assertNull(LockDirectory.refusal(Path.of("/mnt/odd"), "fuse.someonesfs", true), "accepted when trusted");
    }

    @Test
    void thisHostsMountTableNamesTheFixturesFileSystem() throws Exception {
        try (FileFixture fixture = new FileFixture("file-mount")) {
            Path real = fixture.dir().toRealPath();
            org.junit.jupiter.api.Assumptions.assumeTrue(Files.isReadable(Path.of("/proc/self/mountinfo")), "Linux");
            assertEquals(Files.getFileStore(real).type(), LocalFileSystems.typeOf(real),
                    "the mount table and the JDK agree on the type of " + real);
        }
    }

    @Test
    void theUriTakesTheOverrideAsAnOption() throws Exception {
        try (FileFixture fixture = new FileFixture("file-mount-uri");
             Locker l = Lockers.open("file:" + fixture.dir() + "?trustFileSystem=true")) {
            assertInstanceOf(FileLocker.class, l);
            assertTrue(Lockers.check("file:" + fixture.dir() + "?trustFileSystem=false", LockerConfig.defaults()) != null);
        }
    }

    @Test
    void mountPointsWithEscapedTabsNewlinesAndBackslashesAreReadWhole() {
        List<String> mountinfo = List.of(
                "26 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw",
                "60 26 0:50 / /mnt/a\\011b rw,relatime shared:40 - nfs4 nas:/tab rw",
                "61 26 0:51 / /mnt/c\\012d rw,relatime shared:41 - cifs //nas/newline rw",
                "62 26 0:52 / /mnt/e\\134f rw,relatime shared:42 - 9p share rw",
                "63 26 0:53 / /mnt/g\\040-\\040h rw,relatime shared:43 - virtiofs share rw");
        assertEquals("nfs4", LocalFileSystems.typeIn(mountinfo, Path.of("/mnt/a\tb/locks")));
        assertEquals("cifs", LocalFileSystems.typeIn(mountinfo, Path.of("/mnt/c\nd/locks")));
        assertEquals("9p", LocalFileSystems.typeIn(mountinfo, Path.of("/mnt/e\\f/locks")));
        assertEquals("virtiofs", LocalFileSystems.typeIn(mountinfo, Path.of("/mnt/g - h/locks")),
                "a mount point holding \" - \" is not taken for the separator");
        assertEquals("ext4", LocalFileSystems.typeIn(mountinfo, Path.of("/mnt/a/locks")));
    }

    @Test
    void aMountHiddenByALaterMountOverItsParentDoesNotDecideTheType() {
        List<String> mountinfo = List.of(
                "26 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw",
                "60 26 259:3 / /srv/data/local rw,relatime shared:40 - xfs /dev/nvme1n1 rw",
                "61 26 0:51 / /srv/data rw,relatime shared:41 - nfs4 nas:/export rw,vers=4.2");
        assertEquals("nfs4", LocalFileSystems.typeIn(mountinfo, Path.of("/srv/data/local/locks")),
                "/srv/data/local of the xfs mount is hidden under the NFS mount made later on /srv/data");
    }

    /**
     * A tmpfs mounted on {@code base/a/b}, then a hugetlbfs (a type file: does not know) mounted on {@code base/a}
     * over it, and the lock directory made in the hugetlbfs (mounting needs root; skipped elsewhere).
     */
    @Test
    void aLockDirectoryUnderAMountMadeOverAnEarlierMountHasTheTypeOfTheMountOnTop() throws Exception {
        Path base = Files.createTempDirectory(Files.createDirectories(Path.of("target", "lock-dirs")), "stacked-")
                .toRealPath();
        Path a = base.resolve("a");
        Path hidden = Files.createDirectories(a.resolve("b"));
        try {
            Assumptions.assumeTrue(run("mount", "-t", "tmpfs", "tmpfs", hidden.toString()), "can mount (root)");
            Assumptions.assumeTrue(run("mount", "-t", "hugetlbfs", "none", a.toString()), "can mount a hugetlbfs");
            Path locks = Files.createDirectories(a.resolve("b").resolve("locks")).toRealPath();
            String jdk = Files.getFileStore(locks).type();
            assertEquals("hugetlbfs", jdk, "the JDK sees the mount on top");
            assertEquals(jdk, LocalFileSystems.typeOf(locks), "the type of " + locks + ", under the mount on top");
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> FileLocker.builder(locks).build().close(), "a type file: does not know is refused");
            assertTrue(refused.getMessage().contains("'hugetlbfs'"), refused.getMessage());
        } finally {
            run("umount", "-l", a.toString());
            run("umount", "-l", hidden.toString());
            Files.deleteIfExists(hidden);
            Files.deleteIfExists(a);
            Files.deleteIfExists(base);
        }
    }

    /** A lock directory named through a link into a hugetlbfs (mounting needs root; skipped elsewhere). */
    @Test
    void aLockDirectoryReachedThroughALinkIsJudgedByTheFileSystemTheLinkLeadsTo() throws Exception {
        Path base = Files.createTempDirectory(Files.createDirectories(Path.of("target", "lock-dirs")), "linked-")
                .toRealPath();
        Path mount = Files.createDirectories(base.resolve("mnt"));
        Path link = base.resolve("locks");
        try {
            Assumptions.assumeTrue(run("mount", "-t", "hugetlbfs", "none", mount.toString()), "can mount (root)");
            Files.createSymbolicLink(link, Files.createDirectories(mount.resolve("locks")));
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> FileLocker.builder(link).build().close(), "a type file: does not know is refused");
            assertTrue(refused.getMessage().contains("'hugetlbfs'"), refused.getMessage());
            assertEquals(List.of(), listOf(mount.resolve("locks")), "nothing was made in the refused directory");
        } finally {
            run("umount", "-l", mount.toString());
            Files.deleteIfExists(link);
            Files.deleteIfExists(mount);
            Files.deleteIfExists(base);
        }
    }

    /** A lock directory asked for inside a hugetlbfs, below folders that do not exist yet (needs root). */
    @Test
    void aRefusedLockDirectoryIsNotCreatedNorAnyFolderAboveIt() throws Exception {
        Path base = Files.createTempDirectory(Files.createDirectories(Path.of("target", "lock-dirs")), "refused-")
                .toRealPath();
        Path mount = Files.createDirectories(base.resolve("mnt"));
        try {
            Assumptions.assumeTrue(run("mount", "-t", "hugetlbfs", "none", mount.toString()), "can mount (root)");
            Path locks = mount.resolve("app").resolve("locks");
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> FileLocker.builder(locks).build().close(), "a type file: does not know is refused");
            assertTrue(refused.getMessage().contains("'hugetlbfs'") && refused.getMessage().contains(locks.toString()),
                    refused.getMessage());
            assertEquals(List.of(), listOf(mount), "nothing was made on the refused file system");
        } finally {
            run("umount", "-l", mount.toString());
            Files.deleteIfExists(mount);
            Files.deleteIfExists(base);
        }
    }

    private static List<Path> listOf(Path dir) throws Exception {
        try (java.util.stream.Stream<Path> entries = Files.list(dir)) {
            return entries.toList();
        }
    }

    private static boolean run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
    }
}
