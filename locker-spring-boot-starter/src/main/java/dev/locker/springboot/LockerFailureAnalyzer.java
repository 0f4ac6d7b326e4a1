package dev.locker.springboot;

import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;

/**
 * Turns a failed start into Spring Boot's "APPLICATION FAILED TO START" report with the remedy: a
 * {@link LockerStartupException}, or a missing Jedis class met while a locker opened (an older Jedis won).
 */
public class LockerFailureAnalyzer implements FailureAnalyzer {

    /** Created by Spring Boot from {@code META-INF/spring.factories}. */
    public LockerFailureAnalyzer() {
    }

    @Override
    public FailureAnalysis analyze(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof LockerStartupException e) {
                return analysis(e);
            }
            if (t instanceof NoClassDefFoundError && t.getMessage() != null
                    && t.getMessage().replace('.', '/').startsWith("redis/clients/jedis/")) {
                return analysis(LockerStartupChecks.jedisTooOld(t));
            }
        }
        return null;
    }

    private static FailureAnalysis analysis(LockerStartupException e) {
        return new FailureAnalysis(e.description(), e.action(), e);
    }
}
