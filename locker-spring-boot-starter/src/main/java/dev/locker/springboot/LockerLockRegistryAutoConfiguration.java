package dev.locker.springboot;

import dev.locker.api.Locker;
import dev.locker.springintegration.LockerLockRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * With {@code locker-spring-integration} and Spring Integration on the classpath and a {@link Locker} bean: Spring
 * Integration's {@link LockRegistry} is a {@link LockerLockRegistry} over that locker.
 *
 * <p>A registry key {@code K} is the Locker lock {@code locker.lock-registry.key-prefix + K}, {@code registry:K} by
 * default. A {@code LockRegistry} bean of the application's own replaces this one, and
 * {@code locker.lock-registry.enabled=false} turns it off. The registry never closes the locker; Spring does.
 */
@AutoConfiguration(after = LockerAutoConfiguration.class)
@ConditionalOnClass({LockerLockRegistry.class, LockRegistry.class})
@ConditionalOnBean(Locker.class)
@ConditionalOnProperty(prefix = "locker.lock-registry", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(LockerProperties.class)
public class LockerLockRegistryAutoConfiguration {

    /** Created by Spring. */
    public LockerLockRegistryAutoConfiguration() {
    }

    /**
     * Spring Integration's lock registry over the locker.
     *
     * @param locker     the locker that keeps the claims
     * @param properties the {@code locker.*} properties, for {@code locker.lock-registry.key-prefix}
     * @return the registry
     * @throws LockerStartupException when the key prefix carries a pasted inline comment
     */
    @Bean
    @ConditionalOnMissingBean(LockRegistry.class)
    public LockerLockRegistry lockerLockRegistry(Locker locker, LockerProperties properties) {
        String prefix = properties.getLockRegistry().getKeyPrefix();
        LockerStartupChecks.noInlineComment("locker.lock-registry.key-prefix", prefix, true);
        return LockerLockRegistry.builder(locker).keyPrefix(prefix == null ? "" : prefix).build();
    }
}
