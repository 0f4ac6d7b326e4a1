package dev.locker.sample;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

import java.util.List;

/** Shows which digest runs this instance made, and under which fencing tokens. */
@RestController
public class DigestController {

    private final DigestJob job;

    /**
     * A controller over the digest job.
     *
     * @param job the job
     */
    public DigestController(DigestJob job) {
        this.job = job;
    }

    /**
     * This instance's newest digest runs.
     *
     * @return the runs, oldest first
     */
    @GetMapping("/jobs/digest")
    public List<DigestJob.Run> runs() {
        return job.runs();
    }
}
