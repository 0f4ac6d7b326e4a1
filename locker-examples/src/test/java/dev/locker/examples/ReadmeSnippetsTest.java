package dev.locker.examples;

import dev.locker.api.Lockers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import java.io.IOException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every ```java block of the README compiles as written, and every whole program in it runs on {@code mem:}.
 *
 * <p>A block that declares a public class is compiled as that class's source file, and run if it has a main. Any other
 * block is a fragment: its imports go to the top, its statements become the body of {@link ReadmeContext#run()},
 * which declares what fragments may assume (the README says which); fragments are compiled, and run against a
 * {@code mem:} locker. A block's {@code redis://localhost:6379} runs as {@code mem:}, its {@code file:/tmp/locker-jobs} in a
 * directory of the test's own: the test needs no server and meets no earlier run's locks.
 */
class ReadmeSnippetsTest {

    private static final Pattern BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);
    private static final Pattern PUBLIC_CLASS = Pattern.compile("(?m)^public (?:final )?class (\\w+)");

    @Test
    void everyJavaBlockOfTheReadmeCompilesAndTheProgramsRun(@TempDir Path dir) throws Exception {
        String readme = Files.readString(readme(), StandardCharsets.UTF_8);
        List<Path> sources = new ArrayList<>();
        List<String> programs = new ArrayList<>();
        List<String> fragments = new ArrayList<>();
        Matcher m = BLOCK.matcher(readme);
        int n = 0;
        while (m.find()) {
            n++;
            // the blocks name a local Redis and a shared /tmp directory; the test runs them on the in-JVM backend and
            // on a directory of its own (string literals: the code compiles the same), so no earlier run is met
            String code = m.group(1).replace("\"redis://localhost:6379", "\"mem:readme")
                    .replace("\"file:/tmp/locker-jobs", "\"file:" + dir.resolve("locker-jobs"));
            Matcher c = PUBLIC_CLASS.matcher(code);
            if (c.find()) {
                Path src = dir.resolve(c.group(1) + ".java");
                Files.writeString(src, code);
                sources.add(src);
                if (code.contains("public static void main(")) {
                    programs.add(c.group(1));
                }
            } else {
                String name = "ReadmeFragment" + n;
                StringBuilder imports = new StringBuilder();
                StringBuilder body = new StringBuilder();
                for (String line : code.split("\n", -1)) {
                    (line.startsWith("import ") ? imports : body).append(line).append('\n');
                }
                Path src = dir.resolve(name + ".java");
                Files.writeString(src, "import dev.locker.api.*;\nimport dev.locker.micrometer.*;\n" + imports
                        + "public class " + name + " extends dev.locker.examples.ReadmeContext {\n"
                        + "public void run() throws Exception {\n" + body + "}\n}\n");
                sources.add(src);
                fragments.add(name);
            }
        }
        assertTrue(n >= 5, "the README's java blocks were found (" + n + ")");

        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertNotNull(javac, "a JDK runs the tests");
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        Path out = Files.createDirectories(dir.resolve("classes"));
        try (StandardJavaFileManager files = javac.getStandardFileManager(diagnostics, null, StandardCharsets.UTF_8)) {
            boolean ok = javac.getTask(null, files, diagnostics,
                    List.of("-d", out.toString(), "-cp", System.getProperty("java.class.path"), "-proc:none"),
                    null, files.getJavaFileObjectsFromPaths(sources)).call();
            StringBuilder errors = new StringBuilder();
            for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
                if (d.getKind() == Diagnostic.Kind.ERROR) {
                    errors.append(d.getSource() == null ? "" : Path.of(d.getSource().toUri()).getFileName())
                            .append(':').append(d.getLineNumber()).append(": ").append(d.getMessage(null)).append('\n');
                }
            }
            assertTrue(ok, "the README's java blocks compile:\n" + errors);
        }

        try (URLClassLoader loader = new URLClassLoader(new URL[] {out.toUri().toURL()}, getClass().getClassLoader())) {
            for (String program : programs) {
                Method main = loader.loadClass(program).getMethod("main", String[].class);
                main.invoke(null, (Object) new String[0]); // the programs default to mem:
            }
            for (String fragment : fragments) {
                ReadmeContext context = (ReadmeContext) loader.loadClass(fragment).getConstructor().newInstance();
                try (var locker = Lockers.open(context.uri)) {
                    context.locker = locker;
                    context.run();
                }
            }
        }
        assertEquals(n, sources.size(), "every block was compiled");
    }

    private static Path readme() throws IOException {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("README.md")) && Files.isDirectory(p.resolve("locker-api"))) {
                return p.resolve("README.md");
            }
        }
        throw new IOException("README.md of the project not found above " + Path.of("").toAbsolutePath());
    }
}
