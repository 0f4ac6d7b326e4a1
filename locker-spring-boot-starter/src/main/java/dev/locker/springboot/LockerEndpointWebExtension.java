package dev.locker.springboot;

import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.EndpointWebExtension;
import org.springframework.lang.Nullable;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The {@code locks} endpoint over HTTP: a bad query parameter answers 400 with the reason in the body. Spring Boot's
 * own 400 hides the reason unless {@code server.error.include-message} is set, so the operator would see no cause.
 */
@EndpointWebExtension(endpoint = LockerEndpoint.class)
public class LockerEndpointWebExtension {

    private final LockerEndpoint endpoint;

    /**
     * The web face of {@code endpoint}.
     *
     * @param endpoint the endpoint that lists
     */
    public LockerEndpointWebExtension(LockerEndpoint endpoint) {
        this.endpoint = endpoint;
    }

    /**
     * One page of held locks, or a 400 naming the bad parameter.
     *
     * @param prefix key prefix, or null for every lock
     * @param limit  page size, or null for 100
     * @param cursor the previous page's {@code nextCursor}, or null for the first page
     * @return the page ({@link LockerEndpoint#locks}) with 200, or {@code status}, {@code error} and {@code message} with 400
     */
    @ReadOperation
    public WebEndpointResponse<Map<String, Object>> locks(@Nullable String prefix, @Nullable String limit,
            @Nullable String cursor) {
        try {
            return new WebEndpointResponse<>(endpoint.locks(prefix, limit, cursor));
        } catch (InvalidEndpointRequestException e) {
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("status", WebEndpointResponse.STATUS_BAD_REQUEST);
            body.put("error", "Bad Request");
            body.put("message", e.getReason());
            return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_BAD_REQUEST);
        }
    }
}
