package dev.locker.faults;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A serving worker JVM runs each run with a locker of its own, and leaves when a run may have marked it. */
class WorkerProcessTest {

    @Test
    void aServingJvmGivesEachRunANewLockerAndWaitsIdleInBetween(@TempDir Path tmp) throws Exception {
        WorkerProcess jvm = start(tmp);
        try {
            List<Event> first = run(jvm, tmp, "a", false);
            assertTrue(jvm.isIdle(), "the first run left nothing behind, so the JVM waits for another");
            List<Event> second = run(jvm, tmp, "b", false);
            assertTrue(jvm.isIdle());

            String firstRid = ready(first).detail().split(",")[0];
            String secondRid = ready(second).detail().split(",")[0];
            assertNotEquals(firstRid, secondRid, "each run opens a locker of its own");
            assertEquals(ready(first).detail().split(",")[1], ready(second).detail().split(",")[1], "in one JVM");
            assertTrue(second.stream().allMatch(e -> e.source().equals("b")), "a run sees only its own worker");
            assertTrue(second.stream().anyMatch(e -> e.type() == Event.Type.EXIT));
        } finally {
            jvm.process().destroyForcibly();
        }
    }

    @Test
    void aJvmWhoseLeaseWasClosedOnAnInterruptedThreadServesNoOtherRun(@TempDir Path tmp) throws Exception {
        WorkerProcess jvm = start(tmp);
        try {
            run(jvm, tmp, "a", true);
            assertFalse(jvm.isIdle());
            assertTrue(jvm.process().waitFor(60, java.util.concurrent.TimeUnit.SECONDS), "the JVM exits");
            assertTrue(Files.readString(tmp.resolve("a.stdout")).contains("UNFIT"), "and says why");
        } finally {
            jvm.process().destroyForcibly();
        }
    }

    private static WorkerProcess start(Path tmp) {
        Path log = tmp.resolve("jvm.log");
        List<String> cmd = WorkerJvm.in(tmp.resolve("worker-jvm")).command("file", List.of("-Dfaults.log=" + log),
                List.of("--serve"));
        return WorkerProcess.start(new ProcessBuilder(cmd), "file-test", log, tmp.resolve("jvm.stderr"));
    }

    private static List<Event> run(WorkerProcess jvm, Path tmp, String id, boolean closeInterrupted)
            throws Exception {
        Timeline timeline = new Timeline();
        Path locks = Files.createDirectories(tmp.resolve("locks-" + id));
        try (Referee referee = new Referee(timeline)) {
            jvm.serve(id, timeline, tmp, List.of("--id=" + id, "--uri=file:" + locks, "--locks=L0",
                    "--referee=" + referee.port(), "--cycles=2", "--holdMs=0", "--writes=1", "--waitMs=10000",
                    "--gapMs=0", "--releasePauseMs=0", "--keepAlive=true", "--seed=1",
                    "--closeInterruptedAndQuit=" + closeInterrupted));
            assertTrue(timeline.await(0, e -> e.type() == Event.Type.READY, Duration.ofSeconds(60)).isPresent(),
                    "the worker opened its locker");
            jvm.send("GO " + (System.nanoTime() + Duration.ofMinutes(1).toNanos()));
            if (closeInterrupted) {
                assertTrue(timeline.await(0, e -> e.type() == Event.Type.RELEASED, Duration.ofSeconds(60))
                        .isPresent());
                jvm.send("STOP");
            }
            assertTrue(jvm.awaitRunEnd(Duration.ofSeconds(60)), "the run ends");
        }
        return timeline.events().stream().filter(e -> !e.source().equals(Referee.SOURCE)).toList();
    }

    private static Event ready(List<Event> events) {
        return events.stream().filter(e -> e.type() == Event.Type.READY).findFirst().orElseThrow();
    }
}
