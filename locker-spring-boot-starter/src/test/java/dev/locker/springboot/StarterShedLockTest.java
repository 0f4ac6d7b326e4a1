package dev.locker.springboot;

import dev.locker.api.KeyColumn;
import dev.locker.api.LockInfo;
import dev.locker.api.Locker;
import dev.locker.shedlock.LockedTask;
import dev.locker.shedlock.LockerLockProvider;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.LockingTaskExecutor;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** ShedLock gets a lock provider over the starter's locker when locker-shedlock is present and the application has none. */
class StarterShedLockTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(LockerAutoConfiguration.class, LockerShedLockAutoConfiguration.class));

    @Test
    void aTaskRunsUnderAShedLockLockOnTheLockersBackendWithItsFencingToken(@TempDir Path dir) {
        runner.withPropertyValues("locker.uri=file:" + dir, "locker.rid=shedlock-test").run(context -> {
            LockProvider provider = context.getBean(LockProvider.class);
            assertTrue(provider instanceof LockerLockProvider, provider::toString);
            Locker locker = context.getBean(Locker.class);
            assertSame(locker, ((LockerLockProvider) provider).locker(), "the provider uses the starter's locker");

            LockingTaskExecutor executor = new DefaultLockingTaskExecutor(provider);
            AtomicLong token = new AtomicLong();
            executor.executeWithLock((Runnable) () -> {
                LockInfo held = locker.holding(KeyColumn.named("shedlock:nightly-report")).orElseThrow();
                assertEquals(locker.rid(), held.holder().rid());
                assertEquals(held.fencingToken(), LockedTask.fencingToken());
                token.set(LockedTask.fencingToken());
            }, new LockConfiguration(Instant.now(), "nightly-report", Duration.ofMinutes(1), Duration.ZERO));
            assertTrue(token.get() > 0, "the task ran and read its token");
            assertTrue(locker.holder(KeyColumn.named("shedlock:nightly-report")).isEmpty(), "released after the task");
        });
    }

    @Test
    void theContextClosesTheProviderWithIt() {
        AtomicReference<LockerLockProvider> provider = new AtomicReference<>();
        runner.withPropertyValues("locker.uri=mem:closing").run(context ->
                provider.set(context.getBean(LockerLockProvider.class)));
        LockConfiguration task = new LockConfiguration(Instant.now(), "nightly-report", Duration.ofMinutes(1),
                Duration.ZERO);
        IllegalStateException closed = assertThrows(IllegalStateException.class, () -> provider.get().lock(task));
        assertTrue(closed.getMessage().contains("provider is closed"), closed::getMessage);
    }

    @Test
    void theKeyPrefixPropertyNamesTheLocks() {
        runner.withPropertyValues("locker.uri=mem:prefix-test", "locker.shedlock.key-prefix=jobs/").run(context -> {
            LockerLockProvider provider = context.getBean(LockerLockProvider.class);
            assertEquals(KeyColumn.named("jobs/nightly-report"), provider.lockOf("nightly-report"));
        });
        runner.withPropertyValues("locker.uri=mem:prefix-test", "locker.shedlock.key-prefix=").run(context ->
                assertEquals(KeyColumn.named("nightly-report"),
                        context.getBean(LockerLockProvider.class).lockOf("nightly-report")));
    }

    @Test
    void anApplicationsOwnLockProviderReplacesTheStarters() {
        runner.withPropertyValues("locker.uri=mem:own-provider").withUserConfiguration(OwnProvider.class).run(context -> {
            assertEquals(1, context.getBeansOfType(LockProvider.class).size());
            assertSame(OwnProvider.PROVIDER, context.getBean(LockProvider.class));
            assertNotNull(context.getBean(Locker.class), "the locker is still configured");
        });
    }

    @Test
    void noProviderWithoutLockerShedLockOrShedLockOnTheClasspath() {
        runner.withPropertyValues("locker.uri=mem:no-shedlock")
                .withClassLoader(new FilteredClassLoader(LockerLockProvider.class))
                .run(context -> {
                    assertNotNull(context.getBean(Locker.class));
                    assertTrue(context.getBeansOfType(LockProvider.class).isEmpty());
                });
        runner.withPropertyValues("locker.uri=mem:no-shedlock")
                .withClassLoader(new FilteredClassLoader("net.javacrumbs.shedlock"))
                .run(context -> {
                    assertNotNull(context.getBean(Locker.class));
                    assertEquals(0, context.getBeanNamesForType(LockerLockProvider.class).length);
                });
    }

    @Test
    void noProviderWhenTurnedOffOrWithoutALocker() {
        runner.withPropertyValues("locker.uri=mem:turned-off", "locker.shedlock.enabled=false").run(context -> {
            assertNotNull(context.getBean(Locker.class));
            assertTrue(context.getBeansOfType(LockProvider.class).isEmpty());
        });
        runner.run(context -> {
            assertFalse(context.containsBean("locker"), "no locker.uri, no locker");
            assertTrue(context.getBeansOfType(LockProvider.class).isEmpty());
        });
    }

    @Test
    void aKeyPrefixWithAnInlineCommentFailsTheStartNamingTheProperty() {
        runner.withPropertyValues("locker.uri=mem:comment", "locker.shedlock.key-prefix=jobs: # ours").run(context -> {
            assertNotNull(context.getStartupFailure());
            String message = String.valueOf(rootMessages(context.getStartupFailure()));
            assertTrue(message.contains("locker.shedlock.key-prefix"), message);
            assertTrue(message.contains("inline comment"), message);
        });
    }

    private static StringBuilder rootMessages(Throwable failure) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            all.append(t.getMessage()).append('\n');
        }
        return all;
    }

    /** An application that brings its own ShedLock provider. */
    @Configuration(proxyBeanMethods = false)
    static class OwnProvider {
        static final LockProvider PROVIDER = new LockProvider() {
            @Override
            public Optional<SimpleLock> lock(LockConfiguration lockConfiguration) {
                return Optional.empty();
            }
        };

        @Bean
        LockProvider ownLockProvider() {
            return PROVIDER;
        }
    }
}
