package dev.locker.springboot;

import dev.locker.api.Locker;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;

/**
 * With Spring Boot Actuator and a {@link Locker} bean (this starter's or the application's own): the health indicator
 * {@code locker} ({@link LockerHealthIndicator}; {@code management.health.locker.enabled=false} turns it off, and so
 * does {@code management.health.defaults.enabled=false} unless the former is true) and the
 * endpoint {@code locks} ({@link LockerEndpoint}), exposed like any other endpoint
 * ({@code management.endpoints.web.exposure.include=health,locks}).
 */
@AutoConfiguration(after = LockerAutoConfiguration.class)
@ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
@ConditionalOnBean(Locker.class)
@EnableConfigurationProperties(LockerProperties.class)
public class LockerActuatorAutoConfiguration {

    /** Created by Spring. */
    public LockerActuatorAutoConfiguration() {
    }

    /**
     * The health indicator: asks the backend one read.
     *
     * @param locker     the locker
     * @param properties the {@code locker.*} properties (the URI's scheme names the backend in the details)
     * @return the indicator, named {@code locker}
     */
    @Bean
    @ConditionalOnMissingBean(name = "lockerHealthIndicator")
    @Conditional(OnLockerHealthEnabled.class)
    public LockerHealthIndicator lockerHealthIndicator(Locker locker, LockerProperties properties) {
        return new LockerHealthIndicator(locker, properties.getUri());
    }

    /**
     * The {@code locks} endpoint.
     *
     * @param locker the locker to list through
     * @return the endpoint
     */
    @Bean
    @ConditionalOnMissingBean
    public LockerEndpoint lockerEndpoint(Locker locker) {
        return new LockerEndpoint(locker);
    }

    /**
     * The {@code locks} endpoint's HTTP face, which answers a bad parameter with 400 and its reason.
     *
     * @param endpoint the endpoint
     * @return the web extension
     */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(LockerEndpoint.class)
    public LockerEndpointWebExtension lockerEndpointWebExtension(LockerEndpoint endpoint) {
        return new LockerEndpointWebExtension(endpoint);
    }
}
