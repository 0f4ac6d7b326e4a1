package dev.locker.file;

import dev.locker.api.TimeSource;
import dev.locker.spi.DeploymentCheck.Finding;

/** A separate JVM for {@link FileDoctorTest}: prints the doctor's clock finding as this process sees it. */
public final class DoctorClockChild {

    private DoctorClockChild() {
    }

    public static void main(String[] args) {
        Finding f = FileDoctor.clockFinding(TimeSource.system());
        System.out.println(f.level() + " " + f.why());
    }
}
