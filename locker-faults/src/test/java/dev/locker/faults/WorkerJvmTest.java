package dev.locker.faults;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.jar.JarFile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A worker's classpath holds jars only, in the harness's order, each directory packed with its whole content. */
class WorkerJvmTest {

    @Test
    void eachDirectoryOfTheClasspathReachesTheWorkerAsAJarInItsPlace(@TempDir Path tmp) throws IOException {
        Path classes = tmp.resolve("classes");
        Files.createDirectories(classes.resolve("dev/locker/x"));
        byte[] bytes = {(byte) 0xca, (byte) 0xfe, 1, 2};
        Files.write(classes.resolve("dev/locker/x/A.class"), bytes);
        Files.writeString(classes.resolve("log4j.properties"), "log4j.rootLogger=INFO\n");
        Path library = tmp.resolve("library.jar");
        Files.writeString(library, "not read");
        Path emptyDirectory = Files.createDirectories(tmp.resolve("empty"));

        String classpath = String.join(File.pathSeparator, classes.toString(), library.toString(),
                emptyDirectory.toString());
        List<String> entries = List.of(WorkerJvm.jarsOnly(classpath, tmp.resolve("jars")).split(File.pathSeparator));

        assertEquals(3, entries.size());
        assertEquals(tmp.resolve("jars/0-classes.jar").toString(), entries.get(0));
        assertEquals(library.toString(), entries.get(1), "a jar stays as it is");
        assertEquals(tmp.resolve("jars/2-empty.jar").toString(), entries.get(2));
        try (JarFile jar = new JarFile(entries.get(0))) {
            assertArrayEquals(bytes, jar.getInputStream(jar.getEntry("dev/locker/x/A.class")).readAllBytes());
            assertTrue(jar.getEntry("log4j.properties") != null, "resources travel with the classes");
            assertTrue(jar.getEntry("dev/locker/x/").isDirectory(), "packages are listed, as a directory lists them");
        }
    }
}
