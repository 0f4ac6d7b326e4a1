package dev.locker.springboot;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.Locker;
import dev.locker.springintegration.LockerLockRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.support.locks.DefaultLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;

import java.nio.file.Path;
import java.util.concurrent.locks.Lock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Spring Integration gets a lock registry over the starter's locker when locker-spring-integration is present. */
class StarterLockRegistryTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(LockerAutoConfiguration.class,
                    LockerLockRegistryAutoConfiguration.class));

    @Test
    void aRegistryLockIsALockerLockOnTheLockersBackend(@TempDir Path dir) {
        runner.withPropertyValues("locker.uri=file:" + dir, "locker.rid=registry-test").run(context -> {
            LockRegistry registry = context.getBean(LockRegistry.class);
            assertTrue(registry instanceof LockerLockRegistry, registry::toString);
            Locker locker = context.getBean(Locker.class);
            assertSame(locker, ((LockerLockRegistry) registry).locker(), "the registry uses the starter's locker");

            Lock lock = registry.obtain("invoice-7");
            lock.lock();
            try {
                LockInfo held = locker.holding(KeyColumn.named("registry:invoice-7")).orElseThrow();
                assertEquals(locker.rid(), held.holder().rid());
                assertEquals(held.fencingToken(), ((LockerLockRegistry) registry).fencingToken("invoice-7"));
            } finally {
                lock.unlock();
            }
            assertTrue(locker.holder(KeyColumn.named("registry:invoice-7")).isEmpty(), "released at unlock");
        });
    }

    @Test
    void theKeyPrefixPropertyNamesTheLocks() {
        runner.withPropertyValues("locker.uri=mem:registry-prefix", "locker.lock-registry.key-prefix=orders/")
                .run(context -> assertEquals(KeyColumn.named("orders/7"),
                        context.getBean(LockerLockRegistry.class).lockOf("7")));
    }

    @Test
    void anApplicationsOwnLockRegistryReplacesTheStarters() {
        runner.withPropertyValues("locker.uri=mem:own-registry").withUserConfiguration(OwnRegistry.class)
                .run(context -> {
                    assertEquals(1, context.getBeansOfType(LockRegistry.class).size());
                    assertSame(OwnRegistry.REGISTRY, context.getBean(LockRegistry.class));
                });
    }

    @Test
    void noRegistryWithoutTheModuleOrSpringIntegrationWhenTurnedOffOrWithoutALocker() {
        runner.withPropertyValues("locker.uri=mem:no-module")
                .withClassLoader(new FilteredClassLoader(LockerLockRegistry.class))
                .run(context -> {
                    assertNotNull(context.getBean(Locker.class));
                    assertEquals(0, context.getBeanNamesForType(LockerLockRegistry.class).length);
                });
        runner.withPropertyValues("locker.uri=mem:no-spring-integration")
                .withClassLoader(new FilteredClassLoader("org.springframework.integration"))
                .run(context -> {
                    assertNotNull(context.getBean(Locker.class));
                    assertEquals(0, context.getBeanNamesForType(LockerLockRegistry.class).length);
                });
        runner.withPropertyValues("locker.uri=mem:registry-off", "locker.lock-registry.enabled=false")
                .run(context -> assertTrue(context.getBeansOfType(LockRegistry.class).isEmpty()));
        runner.run(context -> {
            assertFalse(context.containsBean("locker"), "no locker.uri, no locker");
            assertTrue(context.getBeansOfType(LockRegistry.class).isEmpty());
        });
    }

    @Test
    void aKeyPrefixWithAnInlineCommentFailsTheStartNamingTheProperty() {
        runner.withPropertyValues("locker.uri=mem:registry-comment", "locker.lock-registry.key-prefix=k: # ours")
                .run(context -> {
                    assertNotNull(context.getStartupFailure());
                    StringBuilder all = new StringBuilder();
                    for (Throwable t = context.getStartupFailure(); t != null; t = t.getCause()) {
                        all.append(t.getMessage()).append('\n');
                    }
                    assertTrue(all.toString().contains("locker.lock-registry.key-prefix"), all::toString);
                });
    }

    /** An application that brings its own lock registry. */
    @Configuration(proxyBeanMethods = false)
    static class OwnRegistry {
        static final LockRegistry REGISTRY = new DefaultLockRegistry();

        @Bean
        LockRegistry ownLockRegistry() {
            return REGISTRY;
        }
    }
}
