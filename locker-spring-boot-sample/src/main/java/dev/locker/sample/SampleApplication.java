package dev.locker.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/** A web application that runs reports one at a time across all its instances, through the starter's Locker bean. */
@SpringBootApplication
public class SampleApplication {

    /**
     * Starts the application.
     *
     * @param args Spring Boot's command line
     */
    public static void main(String[] args) {
        SpringApplication.run(SampleApplication.class, args);
    }
}
