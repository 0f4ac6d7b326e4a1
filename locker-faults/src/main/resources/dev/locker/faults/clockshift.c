/*
 * Shifts this process's wall clock by CLOCKSHIFT_MS milliseconds (LD_PRELOAD), leaving the monotonic clocks alone.
 * libfaketime crashes redis-server at start: its dlsym allocates, and jemalloc asks the clock while it starts.
 * So this shim calls the kernel directly (no dlsym, no allocation, no libc state to initialise).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long shift_ns;
static int shift_read;

static long long shift(void) {
    if (!shift_read) {
        const char *v = getenv("CLOCKSHIFT_MS");
        shift_ns = v == NULL ? 0 : atoll(v) * 1000000LL;
        shift_read = 1;
    }
    return shift_ns;
}

static void add(struct timespec *ts, long long ns) {
    long long total = (long long) ts->tv_sec * 1000000000LL + ts->tv_nsec + ns;
    ts->tv_sec = (time_t) (total / 1000000000LL);
    ts->tv_nsec = (long) (total % 1000000000LL);
    if (ts->tv_nsec < 0) {
        ts->tv_nsec += 1000000000L;
        ts->tv_sec -= 1;
    }
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
    int r = (int) syscall(SYS_clock_gettime, clk, ts);
    if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) {
        add(ts, shift());
    }
    return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
    struct timespec ts;
    int r = (int) syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
    if (r != 0) {
        return r;
    }
    add(&ts, shift());
    if (tv != NULL) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    (void) tz;
    return 0;
}

time_t time(time_t *t) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t != NULL) {
        *t = ts.tv_sec;
    }
    return ts.tv_sec;
}
