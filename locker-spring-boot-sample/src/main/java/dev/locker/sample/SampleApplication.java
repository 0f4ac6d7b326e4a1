package dev.locker.sample;

import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.scheduling.annotation.EnableScheduling;

/**
 * A web application that runs reports and a scheduled digest one at a time across all its instances. Both take their
 * locks from the starter's Locker bean: the reports directly, the digest through ShedLock's {@code @SchedulerLock}.
 */
@SpringBootApplication
@EnableScheduling
@EnableSchedulerLock(defaultLockAtMostFor = "10m")
public class SampleApplication {

    /**
     * Starts the application.
     *
     * @param args Spring Boot's command line
     */
    public static void main(String[] args) {
        SpringApplication.run(SampleApplication.class, args);
    }

    /**
     * Where the digest goes; a real application keeps it in a table shared by every instance.
     *
     * @return an archive in this process's memory that refuses a write with an older fencing token
     */
    @Bean
    ReportArchive reportArchive() {
        return new FencedReportArchive();
    }
}
