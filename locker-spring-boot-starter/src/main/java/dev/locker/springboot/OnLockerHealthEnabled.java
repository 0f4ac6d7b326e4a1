package dev.locker.springboot;

import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Whether the {@code locker} health indicator is on, as Spring Boot decides it for its own indicators:
 * {@code management.health.locker.enabled} when set, else {@code management.health.defaults.enabled} when set, else
 * on. (Spring Boot's {@code @ConditionalOnEnabledHealthIndicator} lives in the actuator's auto-configuration module,
 * which this starter does not require.)
 */
class OnLockerHealthEnabled extends SpringBootCondition {

    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
        Environment env = context.getEnvironment();
        String own = env.getProperty("management.health.locker.enabled");
        if (own != null) {
            return Boolean.parseBoolean(own.trim())
                    ? ConditionOutcome.match("management.health.locker.enabled is true")
                    : ConditionOutcome.noMatch("management.health.locker.enabled is false");
        }
        String defaults = env.getProperty("management.health.defaults.enabled");
        if (defaults != null && !Boolean.parseBoolean(defaults.trim())) {
            return ConditionOutcome.noMatch("management.health.defaults.enabled is false");
        }
        return ConditionOutcome.match("the locker health indicator is on by default");
    }
}
