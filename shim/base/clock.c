/*
 * shim/base/clock.c — nanosecond clocks, cached thread ids and /proc/<pid>/stat
 * start times (see shim/base/clock.h).
 *
 * Invariants: no malloc, no stdio; /proc is read with one read(2) into a
 * stack buffer and parsed from the last ')' so a command name holding
 * spaces or parentheses cannot shift the fields.
 */
#include "shim/base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__thread uint32_t gm_clock_tid __attribute__((tls_model("initial-exec")));

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t gm_clock_realtime_ns(void)
{
    return clock_ns(CLOCK_REALTIME);
}

uint64_t gm_clock_monotonic_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

int gm_tick_tsc;
uint64_t gm_tick_mult = 1ull << 32;
__thread struct gm_tick_anchor gm_tick_anchor
    __attribute__((tls_model("initial-exec")));

/* True when the kernel's current clocksource is the TSC. */
static bool kernel_uses_tsc(void)
{
    int fd = open("/sys/devices/system/clocksource/clocksource0/"
                  "current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[16] = "";
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n >= 3 && buf[0] == 't' && buf[1] == 's' && buf[2] == 'c' &&
           (n == 3 || buf[3] == '\n');
}

void gm_ticks_init(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (gm_tick_tsc || !kernel_uses_tsc())
        return;
    uint64_t n0 = gm_clock_monotonic_ns(), t0 = __builtin_ia32_rdtsc();
    uint64_t n1, t1;
    do {
        n1 = gm_clock_monotonic_ns();
        t1 = __builtin_ia32_rdtsc();
    } while (n1 - n0 < 200000 && n1 >= n0);
    if (n1 <= n0 || t1 <= t0)
        return;
    uint64_t mult = (uint64_t)(((unsigned __int128)(n1 - n0) << 32) /
                               (t1 - t0));
    if (mult == 0)
        return;
    gm_tick_mult = mult;
    gm_tick_tsc = 1;
#endif
}

uint64_t gm_ticks_realtime_slow(uint64_t t)
{
    uint64_t rt = gm_clock_realtime_ns(), now = gm_ticks();
    gm_tick_anchor.tick = now;
    gm_tick_anchor.rt_ns = rt;
    if (t >= now)
        return rt + gm_ticks_ns(t - now);
    uint64_t back = gm_ticks_ns(now - t);
    return back < rt ? rt - back : 0;
}

uint32_t gm_thread_id_slow(void)
{
    uint32_t t = (uint32_t)syscall(SYS_gettid);
    gm_clock_tid = t;
    return t;
}

void gm_thread_id_reset(void)
{
    gm_clock_tid = 0;
}

/* Reads /proc/<pid>/stat (pid 0: self) into buf; returns bytes read. */
static ssize_t read_stat(int pid, char *buf, size_t cap)
{
    char path[48];
    if (pid == 0)
        snprintf(path, sizeof path, "/proc/self/stat");
    else
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n;
    do {
        n = read(fd, buf, cap - 1);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return n;
}

int gm_proc_start_ticks(int pid, uint64_t *ticks)
{
    if (pid < 0)
        return -1;
    char buf[1024];
    ssize_t n = read_stat(pid, buf, sizeof buf);
    if (n < 0)
        return -1;
    const char *p = NULL;
    for (ssize_t i = n - 1; i >= 0; i--) {
        if (buf[i] == ')') {
            p = buf + i + 1;
            break;
        }
    }
    if (p == NULL)
        return -1;
    /* After ')': " S ppid ..." = fields 3, 4, ...; starttime is field 22. */
    for (int field = 3; field < 22; field++) {
        while (*p == ' ')
            p++;
        while (*p != ' ' && *p != '\0')
            p++;
        if (*p == '\0')
            return -1;
    }
    while (*p == ' ')
        p++;
    if (*p < '0' || *p > '9')
        return -1;
    uint64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *ticks = v;
    return 0;
}

uint64_t gm_proc_start_realtime_ns(uint64_t ticks)
{
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t boot = clock_ns(CLOCK_BOOTTIME);
    uint64_t now = clock_ns(CLOCK_REALTIME);
    if (hz <= 0 || boot == 0 || now == 0)
        return 0;
    uint64_t since_boot = ticks / (uint64_t)hz * 1000000000ull +
                          ticks % (uint64_t)hz * 1000000000ull / (uint64_t)hz;
    if (since_boot > boot)
        since_boot = boot;
    uint64_t age = boot - since_boot;
    return now > age ? now - age : 0;
}

/* The number of threads /proc/<pid>/stat gives after the command's ')'
 * (field 20, the 18th after it), or 0 when it cannot be read. */
static unsigned long stat_threads(const char *after, const char *end)
{
    int field = 3;   /* `after` points at field 3, the state */
    const char *p = after;
    while (p < end && field < 20) {
        if (*p++ == ' ')
            field++;
    }
    unsigned long v = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (unsigned long)(*p - '0');
    return v;
}

/* True when /proc/<pid>/stat shows a zombie or dying task ('Z', 'X')
 * with no other thread: it keeps its pid and start time, but its memory
 * and descriptors are gone. A leader that called pthread_exit shows 'Z'
 * too while its other threads run on (the thread count says so): that
 * process is alive. So is, for the moment its other threads take to go,
 * a whole process that is exiting (its descriptors and locks go with the
 * last thread). */
static bool proc_finished(int pid)
{
    char buf[1024];
    ssize_t n = read_stat(pid, buf, sizeof buf);
    if (n <= 0)
        return false;
    for (ssize_t i = n - 1; i >= 0; i--) {
        if (buf[i] != ')')
            continue;
        if (!(i + 2 < n && buf[i + 1] == ' ' &&
              (buf[i + 2] == 'Z' || buf[i + 2] == 'X')))
            return false;
        return stat_threads(buf + i + 2, buf + n) <= 1;
    }
    return false;
}

bool gm_proc_alive(int pid, uint64_t start_ticks)
{
    if (pid <= 0)
        return false;
    if (kill(pid, 0) != 0 && errno != EPERM)
        return false;
    if (proc_finished(pid))
        return false;
    if (start_ticks == 0)
        return true;
    uint64_t t;
    if (gm_proc_start_ticks(pid, &t) == 0)
        return t == start_ticks;
    /* Unreadable: without /proc at all, trust kill(); with /proc, the
     * process is gone (it exited between the two checks). */
    return gm_proc_start_ticks(0, &t) != 0;
}
