package dev.locker.faults;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

/**
 * How the harness starts a worker JVM: with the harness's classpath as jars only, and one class-data archive per backend.
 *
 * <h2>Why</h2>
 * Each worker is a fresh JVM, and the fault suite starts about 130 of them.
 * Most of a worker's CPU goes into loading, parsing and verifying its backend client's classes.
 * A dynamic class-data archive (AppCDS, JDK 17) maps those classes ready-made, so later starts skip that work.
 * A short training worker writes each backend's archive once, before the backend's first run.
 * The archive changes only how classes load: the workers, their arguments and the checkers stay as they were.
 *
 * <h2>The classpath</h2>
 * An archive accepts jars only: the JVM refuses to write one while a non-empty directory is on the classpath.
 * So each directory of the harness's classpath is packed into a jar once, in its place in the order.
 * When training fails, workers of that backend start without an archive, as they did before.
 */
public final class WorkerJvm {

    /** The options of every worker JVM: a small heap, and the quick compiler only (workers live seconds). */
    static final List<String> BASE_OPTIONS = List.of("-Xmx160m", "-Xss512k", "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1");

    private static final Map<Path, WorkerJvm> BY_DIR = new HashMap<>();

    private final Path dir;
    private final String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    private final String classpath;
    private final Set<String> trained = new HashSet<>();
    private final Map<String, Path> archives = new ConcurrentHashMap<>();

    private WorkerJvm(Path dir) {
        this.dir = dir;
        this.classpath = jarsOnly(System.getProperty("java.class.path"), dir.resolve("classpath"));
    }

    /**
     * The launcher of this JVM's workers, keeping its jars and archives under {@code dir}.
     *
     * @param dir a directory of its own
     * @return the launcher, one per directory
     */
    public static synchronized WorkerJvm in(Path dir) {
        return BY_DIR.computeIfAbsent(dir.toAbsolutePath(), WorkerJvm::new);
    }

    /**
     * The directory of this launcher's jars and archives, where worker JVMs keep their logs too.
     *
     * @return the directory
     */
    public Path dir() {
        return dir;
    }

    /**
     * The command that starts a worker of {@code backend}, with its archive once one was written.
     *
     * @param backend    the backend's name (one archive each)
     * @param jvmOptions the backend's own JVM options, and the worker's log
     * @param workerArgs the {@link Worker}'s arguments
     * @return the command
     */
    public List<String> command(String backend, List<String> jvmOptions, List<String> workerArgs) {
        Path archive = archives.get(backend);
        return command(archive == null ? List.of() : List.of("-XX:SharedArchiveFile=" + archive), jvmOptions,
                workerArgs);
    }

    private List<String> command(List<String> archiveOptions, List<String> jvmOptions, List<String> workerArgs) {
        List<String> cmd = new ArrayList<>();
        cmd.add(javaBin);
        cmd.addAll(BASE_OPTIONS);
        cmd.addAll(archiveOptions);
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", classpath, Worker.class.getName()));
        cmd.addAll(workerArgs);
        return cmd;
    }

    /**
     * Writes {@code backend}'s archive with one training worker, the first time only; its cycles are its own.
     *
     * @param backend    the backend's name
     * @param jvmOptions the backend's own JVM options, as its workers get them
     * @param workerArgs the training worker's arguments (a lock and a referee of its own)
     * @throws InterruptedException when interrupted
     */
    public void train(String backend, List<String> jvmOptions, List<String> workerArgs) throws InterruptedException {
        synchronized (this) {
            if (!trained.add(backend)) {
                return;
            }
        }
        Path archive = dir.resolve(backend + ".jsa");
        Path log = dir.resolve(backend + "-training");
        List<String> cmd = command(List.of("-XX:ArchiveClassesAtExit=" + archive), jvmOptions, workerArgs);
        try {
            Files.deleteIfExists(archive);
            Process p = new ProcessBuilder(cmd).redirectOutput(log.resolveSibling(log.getFileName() + ".stdout").toFile())
                    .redirectError(log.resolveSibling(log.getFileName() + ".stderr").toFile()).start();
            // stdin stays open until the worker exits: at its end the worker halts at once, before the archive is written
            try (OutputStream in = p.getOutputStream()) {
                in.write(("GO " + Long.MAX_VALUE + "\n").getBytes(StandardCharsets.UTF_8));
                in.flush();
                if (!p.waitFor(120, TimeUnit.SECONDS)) {
                    p.destroyForcibly().waitFor();
                    Files.deleteIfExists(archive);
                }
            }
            // after an uncaught failure (1: say, its open timed out on a loaded machine) the JVM still writes the
            // archive of the classes it loaded; a worker killed here may have left a partial file, deleted above
            if ((p.exitValue() == 0 || p.exitValue() == 1) && Files.isRegularFile(archive)) {
                archives.put(backend, archive);
            } else {
                System.out.println("[locker-faults] " + backend + " workers start without a class-data archive: the"
                        + " training worker exited with " + p.exitValue() + " (see " + log + ".*)");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the training worker of " + backend, e);
        }
    }

    /**
     * The classpath {@code classpath} with each directory replaced by a jar of its content, in its place.
     *
     * @param classpath a classpath
     * @param jars      where the jars go
     * @return the classpath of jars only
     */
    static String jarsOnly(String classpath, Path jars) {
        List<String> out = new ArrayList<>();
        String[] entries = classpath.split(File.pathSeparator);
        for (int i = 0; i < entries.length; i++) {
            Path entry = Path.of(entries[i]);
            if (!Files.isDirectory(entry)) {
                out.add(entries[i]);
                continue;
            }
            Path jar = jars.resolve(i + "-" + entry.getFileName() + ".jar");
            pack(entry, jar);
            out.add(jar.toString());
        }
        return String.join(File.pathSeparator, out);
    }

    private static void pack(Path from, Path jar) {
        try {
            Files.createDirectories(jar.getParent());
            try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar));
                 Stream<Path> files = Files.walk(from)) {
                for (Path f : (Iterable<Path>) files.sorted()::iterator) {
                    String name = from.relativize(f).toString().replace(File.separatorChar, '/');
                    if (name.isEmpty()) {
                        continue;
                    }
                    boolean directory = Files.isDirectory(f);
                    out.putNextEntry(new JarEntry(directory ? name + "/" : name));
                    if (!directory) {
                        Files.copy(f, out);
                    }
                    out.closeEntry();
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot pack " + from + " into " + jar, e);
        }
    }
}
