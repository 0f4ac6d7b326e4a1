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
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every ```java block of the README and of the Markdown files under docs/ compiles, and every program in them runs.
 *
 * <p>A block that declares a public class is compiled as that class's source file, and run if it has a main. Any other
 * block is a fragment: its imports go to the top, its statements become the body of {@link ReadmeContext#run()},
 * which declares what fragments may assume (the README says which); fragments are compiled, and run against a
 * {@code mem:} locker. A block's {@code redis://localhost:6379} runs as {@code mem:}, and its {@code file:/tmp/...}
 * directory becomes one of the test's own: the test needs no server and meets no earlier run's locks.
 */
class ReadmeSnippetsTest {

    private static final Pattern BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);
    private static final Pattern PUBLIC_CLASS = Pattern.compile("(?m)^public (?:final )?class (\\w+)");

    @Test
    void everyJavaBlockOfTheReadmeAndTheDocsCompilesAndTheProgramsRun(@TempDir Path dir) throws Exception {
        Path root = projectRoot();
        List<Path> documents = documents(root);
        List<Path> sources = new ArrayList<>();
        List<String> programs = new ArrayList<>();
        List<String> fragments = new ArrayList<>();
        int n = 0;
        int inReadme = 0;
        for (Path document : documents) {
            Matcher m = BLOCK.matcher(Files.readString(document, StandardCharsets.UTF_8));
            while (m.find()) {
                n++;
                if (document.equals(root.resolve("README.md"))) {
                    inReadme++;
                }
                // string literals only, so the code compiles the same: a shared /tmp directory would carry one run's
                // locks and run-once records into the next, and a local Redis may not be running
                String code = m.group(1).replace("\"redis://localhost:6379", "\"mem:readme")
                        .replace("\"file:/tmp/", "\"file:" + dir.resolve("tmp") + "/");
                Matcher c = PUBLIC_CLASS.matcher(code);
                if (c.find()) {
                    Path src = dir.resolve(c.group(1) + ".java");
                    assertFalse(Files.exists(src), "two programs of the docs are both named " + c.group(1));
                    Files.writeString(src, code);
                    sources.add(src);
                    if (code.contains("public static void main(")) {
                        programs.add(c.group(1));
                    }
                } else {
                    String name = "DocFragment" + n;
                    StringBuilder imports = new StringBuilder();
                    StringBuilder body = new StringBuilder();
                    for (String line : code.split("\n", -1)) {
                        (line.startsWith("import ") ? imports : body).append(line).append('\n');
                    }
                    Path src = dir.resolve(name + ".java");
                    Files.writeString(src, "// " + root.relativize(document) + "\n"
                            + "import dev.locker.api.*;\nimport dev.locker.micrometer.*;\n" + imports
                            + "public class " + name + " extends dev.locker.examples.ReadmeContext {\n"
                            + "public void run() throws Exception {\n" + body + "}\n}\n");
                    sources.add(src);
                    fragments.add(name);
                }
            }
        }
        assertTrue(inReadme >= 2, "the README's java blocks were found (" + inReadme + ")");
        assertTrue(n >= 5, "the docs' java blocks were found (" + n + ")");

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
            assertTrue(ok, "the docs' java blocks compile:\n" + errors);
        }

        try (URLClassLoader loader = new URLClassLoader(new URL[] {out.toUri().toURL()}, getClass().getClassLoader())) {
            for (String program : programs) {
                Method main = loader.loadClass(program).getMethod("main", String[].class);
                main.invoke(null, (Object) new String[0]); // the programs default to mem: or a directory of the test's
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

    /** README.md, then every Markdown file under docs/, in a fixed order. */
    private static List<Path> documents(Path root) throws IOException {
        List<Path> documents = new ArrayList<>();
        documents.add(root.resolve("README.md"));
        try (Stream<Path> docs = Files.walk(root.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(documents::add);
        }
        return documents;
    }

    private static Path projectRoot() throws IOException {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("README.md")) && Files.isDirectory(p.resolve("locker-api"))) {
                return p;
            }
        }
        throw new IOException("README.md of the project not found above " + Path.of("").toAbsolutePath());
    }
}
