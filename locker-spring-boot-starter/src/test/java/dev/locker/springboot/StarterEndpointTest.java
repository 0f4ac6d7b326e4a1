package dev.locker.springboot;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.context.ConfigurableApplicationContext;

import java.lang.reflect.Method;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.locker.springboot.StarterApps.locks;
import static dev.locker.springboot.StarterApps.start;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The {@code locks} actuator endpoint: read-only, paged, exact names in the CLI's notation, bad arguments refused. */
class StarterEndpointTest {

    /**
     * Two locks sharing their first 64 bytes are listed under two names, each as the CLI names it. So a name the
     * endpoint prints can be pasted into locker show or release.
     */
    @Test
    void theEndpointNamesEachLockExactlyAndInTheClisNotation() {
        try (ConfigurableApplicationContext app = start("locker.uri=mem:names?lockWait=1ms")) {
            Locker locker = app.getBean(Locker.class);
            String common = "jobs/" + "x".repeat(70);
            try (Lease a = locker.acquire(KeyColumn.named(common + "-1"), "a");
                 Lease b = locker.acquire(KeyColumn.named(common + "-2"), "b")) {
                List<Map<String, Object>> locks = locks(app.getBean(LockerEndpoint.class).locks("jobs/", null, null));
                assertEquals(2, locks.size(), locks::toString);
                Set<Object> keys = new HashSet<>();
                locks.forEach(l -> keys.add(l.get("key")));
                assertEquals(2, keys.size(), "two locks, two names: " + keys);
                assertTrue(keys.contains(common + "-1"), "as the CLI names it: " + keys);
            }
        }
    }

    @Test
    void theEndpointIsReadOnlyPagesAndRefusesBadArgumentsBeforeAnyIo() {
        for (Method m : LockerEndpoint.class.getMethods()) {
            assertFalse(m.isAnnotationPresent(WriteOperation.class) || m.isAnnotationPresent(DeleteOperation.class),
                    m + " writes");
        }
        try (ConfigurableApplicationContext app = start("locker.uri=mem:pages?lockWait=1ms")) {
            Locker locker = app.getBean(Locker.class);
            LockerEndpoint endpoint = app.getBean(LockerEndpoint.class);
            Lease[] leases = new Lease[5];
            try {
                for (int i = 0; i < leases.length; i++) {
                    leases[i] = locker.acquire(KeyColumn.named("pages/" + i), "page");
                }
                Set<Object> seen = new HashSet<>();
                String cursor = null;
                int calls = 0;
                do {
                    Map<String, Object> page = endpoint.locks("pages/", "2", cursor);
                    assertTrue(locks(page).size() <= 2);
                    locks(page).forEach(l -> assertTrue(seen.add(l.get("key")), "listed twice: " + l));
                    cursor = (String) page.get("nextCursor");
                    calls++;
                } while (cursor != null && calls < 100);
                assertEquals(5, seen.size(), seen::toString);
                assertThrows(InvalidEndpointRequestException.class, () -> endpoint.locks("pages/", "0", null));
                assertThrows(InvalidEndpointRequestException.class, () -> endpoint.locks("pages/", "1001", null));
                assertThrows(InvalidEndpointRequestException.class, () -> endpoint.locks("pages/", "2", "not-a-cursor"));
            } finally {
                for (Lease l : leases) {
                    if (l != null) {
                        l.close();
                    }
                }
            }
        }
    }
}
