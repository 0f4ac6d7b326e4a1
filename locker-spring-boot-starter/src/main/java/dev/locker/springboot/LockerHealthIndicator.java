package dev.locker.springboot;

import dev.locker.api.KeyColumn;
import dev.locker.api.Locker;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

import java.util.Locale;

/**
 * UP when the locker's backend answers a read (who holds the lock {@code locker-health-ping}: one round trip, nothing
 * written), DOWN when it fails or the locker is closed. The details name the backend's scheme, never the URI (it may
 * hold a password).
 */
public class LockerHealthIndicator extends AbstractHealthIndicator {

    private static final KeyColumn PING = KeyColumn.named("locker-health-ping");

    private final Locker locker;
    private final String backend;

    /**
     * A health indicator for {@code locker}.
     *
     * @param locker the locker whose backend is asked
     * @param uri    the locker's URI; only its scheme is shown
     */
    public LockerHealthIndicator(Locker locker, String uri) {
        super("Locker backend is down");
        this.locker = locker;
        int colon = uri == null ? -1 : uri.indexOf(':');
        this.backend = colon <= 0 ? "unknown" : uri.substring(0, colon).toLowerCase(Locale.ROOT);
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        builder.withDetail("backend", backend);
        locker.holder(PING); // throws when the backend cannot be asked; AbstractHealthIndicator reports it DOWN
        builder.up();
    }
}
