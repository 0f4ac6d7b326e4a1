package dev.locker.sample;

import dev.locker.api.KeyColumn;
import dev.locker.api.Lease;
import dev.locker.api.Locker;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

import java.util.Map;

/** Runs a report under its lock, so two instances of the application never run the same report at once. */
@RestController
public class ReportController {

    private final Locker locker;

    /**
     * A controller on the starter's locker.
     *
     * @param locker the Locker bean from {@code locker.uri}
     */
    public ReportController(Locker locker) {
        this.locker = locker;
    }

    /**
     * Runs report {@code name} while holding {@code reports:NAME}.
     *
     * @param name the report
     * @return the report's name and the fencing token it ran under
     */
    @PostMapping("/reports/{name}")
    public Map<String, Object> run(@PathVariable("name") String name) {
        try (Lease lease = locker.acquire(KeyColumn.of("reports:" + name, "run"), "report " + name)) {
            // the report's writes would carry this token, so a writer that lost its lock is refused downstream
            return Map.of("report", name, "fencingToken", lease.fencingToken());
        }
    }
}
