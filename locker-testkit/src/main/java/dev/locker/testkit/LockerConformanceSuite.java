package dev.locker.testkit;

/**
 * The behaviour every backend must show, written once: every conformance section. A backend's test class extends
 * this and provides a {@link LockerFixture}; a backend with fewer capabilities extends {@link ConformanceBase} and
 * implements only the sections it opts into.
 */
public abstract class LockerConformanceSuite extends ConformanceBase implements
        ThreePhaseSection,
        ExpiryAndFencingSection,
        LeaseSection,
        WaitingSection,
        ForcedReleaseSection,
        UnknownOutcomeSection,
        ClockFaultSection,
        BackendOutageSection,
        LifecycleSection,
        RunOnceSection,
        LimitsSection,
        ListingSection,
        ExpectedValueCheckingSection {
}
