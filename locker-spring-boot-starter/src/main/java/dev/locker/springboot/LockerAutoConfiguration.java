package dev.locker.springboot;

import dev.locker.api.LockProbe;
import dev.locker.api.Locker;
import dev.locker.api.LockerConfig;
import dev.locker.api.Lockers;
import dev.locker.micrometer.LockerMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * With {@code locker.uri} set: a {@link Locker} bean opened from it and the other {@code locker.*} properties, closed
 * with the context (its open leases are released). Each further part appears when the application has what it needs:
 *
 * <ul>
 *   <li>Micrometer, {@code locker-micrometer} and a {@code MeterRegistry} bean: a {@link LockerMetrics} probe, installed
 *       in the locker ({@code locker.metrics.enabled=false} turns it off);</li>
 *   <li>Spring Boot Actuator: the health indicator and the {@code locks} endpoint
 *       ({@link LockerActuatorAutoConfiguration});</li>
 *   <li>{@code locker-shedlock} and ShedLock: ShedLock's {@code LockProvider} over the locker
 *       ({@link LockerShedLockAutoConfiguration}).</li>
 * </ul>
 *
 * <p>A {@code Locker} bean of the application's own replaces this one (the health indicator and the endpoint then use
 * it); so does a {@link LockProbe} bean, which is installed in the locker instead of the meters.
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration"})
@EnableConfigurationProperties(LockerProperties.class)
public class LockerAutoConfiguration {

    /** Created by Spring. */
    public LockerAutoConfiguration() {
    }

    /**
     * The locker, from {@code locker.uri} and the other {@code locker.*} properties.
     *
     * @param properties the {@code locker.*} properties
     * @param probe      a probe to install (the meters, or the application's own), if there is exactly one
     * @return the open locker; Spring closes it with the context
     * @throws LockerStartupException for a property Locker cannot read or a driver older than Locker's
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "locker", name = "uri")
    public Locker locker(LockerProperties properties, ObjectProvider<LockProbe> probe) {
        String uri = properties.getUri();
        LockerStartupChecks.noInlineComment("locker.uri", uri, false);
        LockerStartupChecks.driverFor(uri, Lockers.class.getClassLoader());
        LockerConfig.Builder config;
        try {
            config = properties.toConfig();
        } catch (IllegalArgumentException e) {
            throw new LockerStartupException(e.getMessage(),
                    "Correct that locker.* property where it is set (application.properties, the environment).", e);
        }
        LockProbe p = probe.getIfUnique();
        if (p != null) {
            config.probe(p);
        }
        return Lockers.open(uri, config.build());
    }

    /** The meters, when Micrometer and locker-micrometer are present and the application has a registry. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({LockerMetrics.class, MeterRegistry.class})
    @ConditionalOnBean(MeterRegistry.class)
    @ConditionalOnProperty(prefix = "locker", name = "uri")
    static class MetricsConfiguration {

        @Bean
        @ConditionalOnMissingBean(LockProbe.class)
        @ConditionalOnProperty(prefix = "locker.metrics", name = "enabled", matchIfMissing = true)
        LockerMetrics lockerMetrics(MeterRegistry registry, LockerProperties properties) {
            return LockerMetrics.builder(registry)
                    .backend(LockerMetrics.schemeOf(properties.getUri()))
                    .lockNamePrefixes(properties.getMetrics().getLockNamePrefixes())
                    .build();
        }
    }
}
