package dev.locker.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * Every event of one run, from every source, on one clock: the workers' lines (read from their stdout as they come),
 * the referee's and the harness's. Thread-safe; the harness waits on it for the moment to inject a fault.
 *
 * <p>Invariant: the events of one source keep the order they were added in, and {@link #events()} sorts by time with
 * that order as the tie-break, so a worker's own sequence is never reordered.
 */
public final class Timeline {

    private final List<Event> events = new ArrayList<>();

    /**
     * Adds an event.
     *
     * @param e the event
     */
    public synchronized void add(Event e) {
        events.add(e);
        notifyAll();
    }

    /**
     * Records an event of {@code source} now.
     *
     * @param source who
     * @param type   what
     * @param lock   which lock, worker or server (or null)
     * @param detail free text
     * @return the event added
     */
    public Event note(String source, Event.Type type, String lock, String detail) {
        Event e = new Event(System.nanoTime(), source, type, lock, 0, 0, detail);
        add(e);
        return e;
    }

    /**
     * Every event so far, by time (ties keep the order they were added in).
     *
     * @return a snapshot
     */
    public synchronized List<Event> events() {
        List<Event> copy = new ArrayList<>(events);
        copy.sort(Comparator.comparingLong(Event::nanos)); // stable: ties keep insertion order
        return copy;
    }

    /**
     * Waits until an event added after index {@code from} matches, or the wait runs out.
     *
     * @param from  how many events to skip (as {@link #size()} returned earlier)
     * @param match what to wait for
     * @param max   how long to wait at most
     * @return the first matching event, or empty when none came in time
     * @throws InterruptedException when interrupted
     */
    public synchronized Optional<Event> await(int from, Predicate<Event> match, Duration max) throws InterruptedException {
        long deadline = System.nanoTime() + max.toNanos();
        int seen = from;
        while (true) {
            for (; seen < events.size(); seen++) {
                if (match.test(events.get(seen))) {
                    return Optional.of(events.get(seen));
                }
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return Optional.empty();
            }
            wait(Math.max(1, left / 1_000_000));
        }
    }

    /**
     * The position just after {@code e} in the order events were added (a starting point for {@link #await}).
     *
     * @param e an event of this timeline
     * @return its index plus one, or 0 when it is not here
     */
    public synchronized int after(Event e) {
        for (int i = events.size() - 1; i >= 0; i--) {
            if (events.get(i) == e) {
                return i + 1;
            }
        }
        return 0;
    }

    /**
     * How many events were added so far (a starting point for {@link #await}).
     *
     * @return the count
     */
    public synchronized int size() {
        return events.size();
    }

    /**
     * Writes the merged timeline, one event per line.
     *
     * @param file where
     */
    public void write(Path file) {
        List<String> lines = new ArrayList<>();
        for (Event e : events()) {
            lines.add(e.toLine());
        }
        try {
            Files.createDirectories(file.getParent());
            Files.write(file, lines, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the timeline to " + file, e);
        }
    }

    /**
     * Reads a timeline written by {@link #write}.
     *
     * @param file the file
     * @return the timeline
     */
    public static Timeline read(Path file) {
        Timeline t = new Timeline();
        try {
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                if (!line.isBlank()) {
                    t.add(Event.parse(line));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the timeline " + file, e);
        }
        return t;
    }
}
