package dev.locker.testkit;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The check that test classes splitting the conformance suite between them still run every section of it. A backend
 * splits the suite so that its halves, each on a server of its own, run side by side.
 */
public final class ConformanceHalves {

    private ConformanceHalves() {
    }

    /** Fails naming each section of {@link LockerConformanceSuite} that none of {@code halves} implements. */
    public static void assertTogetherRunEverySection(Class<?>... halves) {
        Set<Class<?>> missing = new HashSet<>(List.of(LockerConformanceSuite.class.getInterfaces()));
        for (Class<?> half : halves) {
            missing.removeAll(List.of(half.getInterfaces()));
        }
        assertEquals(Set.of(), missing, "sections of the suite that none of " + List.of(halves) + " runs");
    }
}
