package dev.locker.hbase;

import dev.locker.testkit.LateGrantSection;
import dev.locker.testkit.LeaseDurationsSection;
import dev.locker.testkit.LockerConformanceSuite;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The conformance classes of {@link HBaseLocker} run every section of the suite between them. */
class HBaseConformanceCoverageTest {

    @Test
    void theAtomicLockerRunsEverySectionOfTheSuiteLeaseDurationsAndLateGrants() {
        Set<String> wanted = sectionsOf(LockerConformanceSuite.class);
        wanted.add(LeaseDurationsSection.class.getSimpleName());
        wanted.add(LateGrantSection.class.getSimpleName());
        assertEquals(wanted, sectionsOf(HBaseLockerConformanceTest.class, HBaseLockerLeaseConformanceTest.class));
    }

    /** The sections the classes implement, by simple name, sorted so that a failure reads as a list. */
    private static Set<String> sectionsOf(Class<?>... classes) {
        Set<String> sections = new TreeSet<>();
        for (Class<?> c : classes) {
            for (Class<?> i : allInterfaces(c)) {
                if (i.getSimpleName().endsWith("Section")) {
                    sections.add(i.getSimpleName());
                }
            }
        }
        return sections;
    }

    private static Set<Class<?>> allInterfaces(Class<?> c) {
        Set<Class<?>> found = new HashSet<>();
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            List<Class<?>> direct = Arrays.asList(k.getInterfaces());
            found.addAll(direct);
        }
        return found;
    }
}
