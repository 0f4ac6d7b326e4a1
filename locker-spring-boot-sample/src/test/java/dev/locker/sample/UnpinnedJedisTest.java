package dev.locker.sample;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Without the Jedis pin, Spring Boot's Jedis 6 wins and the start fails with a report naming the pin. Maven runs this
 * class alone, on the sample's classpath with Spring Boot 3.5's own Jedis in place of Locker's (see the pom).
 */
@ExtendWith(OutputCaptureExtension.class)
class UnpinnedJedisTest {

    @Test
    void theStartFailsWithAReportNamingTheJedisVersionToPin(CapturedOutput output) {
        assertThrows(ClassNotFoundException.class, () -> Class.forName("redis.clients.jedis.RedisClient"),
                "this test runs on Spring Boot's older Jedis");
        assertThrows(Throwable.class, () -> SpringApplication.run(SampleApplication.class,
                "--server.port=0", "--locker.uri=redis://localhost:6379").close());
        String report = output.getAll();
        assertTrue(report.contains("APPLICATION FAILED TO START"), report);
        assertTrue(report.contains("locker-redis needs Jedis 8.0.2"), report);
        assertTrue(report.contains("<jedis.version>8.0.2</jedis.version>"), report);
    }
}
