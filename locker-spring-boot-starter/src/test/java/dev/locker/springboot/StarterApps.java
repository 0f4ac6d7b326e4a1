package dev.locker.springboot;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertThrows;

/** Starts the test application with properties, and captures everything a failed start says. */
final class StarterApps {

    private StarterApps() {
    }

    static ConfigurableApplicationContext start(String... properties) {
        return new SpringApplicationBuilder(LockerTestApplication.class)
                .web(WebApplicationType.NONE)
                .properties(properties)
                .run();
    }

    /** Everything a failed start says: the exception chain's messages and what was logged on stderr meanwhile. */
    static String failedStart(String... properties) {
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        Throwable thrown;
        try {
            thrown = assertThrows(Throwable.class, () -> start(properties).close());
        } finally {
            System.setErr(err);
        }
        StringBuilder all = new StringBuilder(captured.toString(StandardCharsets.UTF_8));
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            all.append('\n').append(t);
        }
        return all.toString();
    }

    /** The locks of one page of the {@code locks} endpoint. */
    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> locks(Map<String, Object> page) {
        return (List<Map<String, Object>>) page.get("locks");
    }
}
