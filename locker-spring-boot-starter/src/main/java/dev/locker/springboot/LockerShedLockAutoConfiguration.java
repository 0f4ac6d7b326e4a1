package dev.locker.springboot;

import dev.locker.api.Locker;
import dev.locker.shedlock.LockerLockProvider;
import net.javacrumbs.shedlock.core.LockProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * With {@code locker-shedlock} and ShedLock on the classpath and a {@link Locker} bean: ShedLock's {@link LockProvider}
 * is a {@link LockerLockProvider} over that locker, so {@code @SchedulerLock} tasks run under Locker locks.
 *
 * <p>A ShedLock lock {@code NAME} is the Locker lock {@code locker.shedlock.key-prefix + NAME}, {@code shedlock:NAME}
 * by default. A {@code LockProvider} bean of the application's own replaces this one, and
 * {@code locker.shedlock.enabled=false} turns it off. The context closes the provider before the locker it uses.
 */
@AutoConfiguration(after = LockerAutoConfiguration.class)
@ConditionalOnClass({LockerLockProvider.class, LockProvider.class})
@ConditionalOnBean(Locker.class)
@ConditionalOnProperty(prefix = "locker.shedlock", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(LockerProperties.class)
public class LockerShedLockAutoConfiguration {

    /** Created by Spring. */
    public LockerShedLockAutoConfiguration() {
    }

    /**
     * ShedLock's lock provider over the locker.
     *
     * @param locker     the locker that keeps the claims; Spring closes it after this provider
     * @param properties the {@code locker.*} properties, for {@code locker.shedlock.key-prefix}
     * @return the provider
     * @throws LockerStartupException when the key prefix carries a pasted inline comment
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(LockProvider.class)
    public LockerLockProvider lockerLockProvider(Locker locker, LockerProperties properties) {
        String prefix = properties.getShedlock().getKeyPrefix();
        LockerStartupChecks.noInlineComment("locker.shedlock.key-prefix", prefix, true);
        return new LockerLockProvider(locker, prefix == null ? "" : prefix);
    }
}
