/*
 * tests/bench/bench_top.c — gpumem-top's own CPU cost while it watches 50
 * live processes (target: under 1% of one core at one refresh per
 * second). No assertions: it prints a plain-text table.
 *
 * 50 child processes each create a live segment "<prefix>.<pid>" in
 * /dev/shm under a prefix of their own (gmbtop<pid of this program>),
 * charge a few allocations (odd children on two devices), then wait,
 * writing one alloc + free pair every 200 ms, until told to stop. The
 * program then runs $BUILD/gpumem-top --prefix P as a child in three
 * modes: --json at -d 1 and at -d 0.2 (stdout to /dev/null), and the
 * interactive curses view at -d 1 on a 200x60 pseudo-terminal whose
 * output is read and discarded. Its user + system time comes from wait4;
 * the table shows CPU time / wall time as % of one core, CPU ms per
 * refresh, and the steady-state % (a one-refresh run of the same mode
 * subtracted: start-up excluded).
 *
 * Invariants: the children block SIGTERM/SIGINT/SIGHUP and take them with
 * sigtimedwait, closing (unlinking) their segment before they exit; they
 * get SIGTERM when this program dies (PR_SET_PDEATHSIG). At exit, on the
 * error paths and on SIGINT/SIGTERM the children are stopped and their
 * segment files removed. Skips (exit 0) when $BUILD/gpumem-top is absent.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "shim/telemetry/abi.h"
#include "shim/base/clock.h"
#include "shim/telemetry/telemetry.h"
#include "tests/bench/kids.h"

#define NPROC 50
#define SEG_RING 4096u
#define RUN_LIMIT_NS 30000000000ull   /* a gpumem-top run is killed after */

static pid_t kids[NPROC];
static bool reaped[NPROC];
static int nkids;
static char prefix[40];
static char top_path[512];
static bool cleaned;
static volatile pid_t top_pid;   /* the gpumem-top run in progress, or 0 */

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* ---- children -------------------------------------------------------------- */

static void child_main(int wfd, pid_t parent, int idx)
{
    sigset_t set;
    gm_kid_detach(parent, &set);
    struct gm_tel t;
    struct gm_tel_params p = { .prefix = prefix, .ring_events = SEG_RING,
                               .policy_summary = "limit=8GiB mode=grow" };
    char err[256];
    if (gm_tel_open(&t, &p, err, sizeof err) != 0) {
        (void)!write(wfd, "E", 1);
        _exit(1);
    }
    unsigned ndev = idx % 2 ? 2 : 1;
    uint64_t used[2] = { 0, 0 }, sz = 64ull << 20;
    for (unsigned d = 0; d < ndev; d++) {
        gm_tel_device(&t, d, 80ull << 30, 8ull << 30, NULL);
        for (int i = 0; i <= idx % 8; i++) {
            used[d] += sz;
            gm_tel_alloc(&t, d, GM_API_MEM_ALLOC, 0x10000000ull * (i + 1),
                         sz, 2000, used[d], used[d]);
        }
    }
    (void)!write(wfd, "K", 1);
    close(wfd);
    for (;;) {
        struct timespec to = { 0, 200000000L };
        int s = sigtimedwait(&set, NULL, &to);
        if (s > 0)
            break;
        if (s < 0 && errno != EAGAIN)
            continue;
        gm_tel_alloc(&t, 0, GM_API_MEM_ALLOC, 0x7f0000000000ull, 1u << 20,
                     1500, used[0] + (1u << 20), used[0] + (1u << 20));
        gm_tel_free(&t, 0, GM_API_MEM_FREE, 0x7f0000000000ull, 1u << 20, 400,
                    used[0]);
    }
    gm_tel_close(&t, false);
    _exit(0);
}

/* Starts the children; returns how many have a segment. */
static int start_children(void)
{
    return gm_kids_start(kids, &nkids, NPROC, child_main);
}

/* Async-signal-safe part: SIGKILL the children, remove their files. */
static void kill_and_unlink(void)
{
    char path[128];
    for (int i = 0; i < nkids; i++) {
        if (!reaped[i])
            kill(kids[i], SIGKILL);
        snprintf(path, sizeof path, "/dev/shm/%s.%ld", prefix,
                 (long)kids[i]);
        unlink(path);
    }
}

/* Stops the children politely (they unlink their own segments), then by
 * force, and removes whatever is left. */
static void cleanup(void)
{
    if (cleaned)
        return;
    cleaned = true;
    for (int i = 0; i < nkids; i++)
        kill(kids[i], SIGTERM);
    uint64_t end = gm_clock_monotonic_ns() + 2000000000ull;
    int left = nkids;
    while (left > 0 && gm_clock_monotonic_ns() < end) {
        left = 0;
        for (int i = 0; i < nkids; i++) {
            if (reaped[i])
                continue;
            pid_t w = waitpid(kids[i], NULL, WNOHANG);
            if (w == 0)
                left++;
            else
                reaped[i] = true;
        }
        if (left > 0)
            sleep_ms(10);
    }
    kill_and_unlink();
    for (int i = 0; i < nkids; i++)
        if (!reaped[i])
            waitpid(kids[i], NULL, 0);
}

static void on_signal(int sig)
{
    if (top_pid > 0)
        kill(top_pid, SIGKILL);
    kill_and_unlink();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ---- running gpumem-top ------------------------------------------------------ */

struct run {
    double wall_s, cpu_s;
    int status;
};

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* Waits for pid, draining fd (when >= 0) meanwhile; kills it past the
 * run limit. */
static void await(pid_t pid, int fd, uint64_t t0, struct run *r)
{
    struct rusage ru;
    char buf[65536];
    bool killed = false;
    top_pid = pid;
    for (;;) {
        pid_t w = wait4(pid, &r->status, WNOHANG, &ru);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            memset(&ru, 0, sizeof ru);
            r->status = -1;
            break;
        }
        if (!killed && gm_clock_monotonic_ns() - t0 > RUN_LIMIT_NS) {
            kill(pid, SIGKILL);
            killed = true;
        }
        if (fd >= 0) {
            struct pollfd pf = { fd, POLLIN, 0 };
            if (poll(&pf, 1, 20) > 0 && read(fd, buf, sizeof buf) <= 0)
                fd = -1;   /* EIO: the terminal's other side is gone */
        } else {
            sleep_ms(5);
        }
    }
    top_pid = 0;
    r->wall_s = (double)(gm_clock_monotonic_ns() - t0) / 1e9;
    r->cpu_s = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
}

/* --json: stdout to out_fd (or /dev/null when out_fd < 0). */
static int run_json(const char *delay, const char *iters, int out_fd,
                    struct run *r)
{
    uint64_t t0 = gm_clock_monotonic_ns();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = out_fd >= 0 ? out_fd : open("/dev/null", O_WRONLY);
        if (fd < 0 || dup2(fd, 1) < 0)
            _exit(127);
        execl(top_path, "gpumem-top", "--prefix", prefix, "--json", "-d",
              delay, "-n", iters, (char *)NULL);
        _exit(127);
    }
    await(pid, -1, t0, r);
    return 0;
}

/* The curses view on a fresh 200x60 pseudo-terminal. */
static int run_tty(const char *delay, const char *iters, struct run *r)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0) {
        if (m >= 0)
            close(m);
        return -1;
    }
    struct winsize ws = { .ws_row = 60, .ws_col = 200 };
    ioctl(m, TIOCSWINSZ, &ws);
    const char *slave = ptsname(m);
    uint64_t t0 = gm_clock_monotonic_ns();
    pid_t pid = slave ? fork() : -1;
    if (pid < 0) {
        close(m);
        return -1;
    }
    if (pid == 0) {
        setsid();
        int s = open(slave, O_RDWR);
        if (s < 0 || dup2(s, 0) < 0 || dup2(s, 1) < 0 || dup2(s, 2) < 0)
            _exit(127);
        setenv("TERM", "xterm-256color", 1);
        execl(top_path, "gpumem-top", "--prefix", prefix, "-d", delay, "-n",
              iters, (char *)NULL);
        _exit(127);
    }
    await(pid, m, t0, r);
    close(m);
    return 0;
}

/* How many processes one --json refresh shows. */
static int count_seen(void)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        return -1;
    fflush(stdout);
    uint64_t t0 = gm_clock_monotonic_ns();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(pfd[0]);
        dup2(pfd[1], 1);
        execl(top_path, "gpumem-top", "--prefix", prefix, "--json", "-n",
              "1", (char *)NULL);
        _exit(127);
    }
    top_pid = pid;
    close(pfd[1]);
    static char out[1 << 20];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof out - 1 &&
           (k = read(pfd[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)k;
    out[n] = '\0';
    close(pfd[0]);
    struct run r;
    await(pid, -1, t0, &r);
    int seen = 0;
    for (const char *p = out; (p = strstr(p, "{\"pid\":")) != NULL; p++)
        seen++;
    return seen;
}

/* ---- table ----------------------------------------------------------------------- */

static bool run_ok(const struct run *r)
{
    return r->status >= 0 && WIFEXITED(r->status) &&
           WEXITSTATUS(r->status) == 0;
}

static void row(const char *mode, const char *delay, long refreshes,
                const struct run *r, const struct run *start)
{
    if (!run_ok(r)) {
        printf("%-12s %6s %9ld  failed (status 0x%x)\n", mode, delay,
               refreshes, (unsigned)r->status);
        return;
    }
    char steady[32] = "-";
    if (r != start && run_ok(start) && r->wall_s > start->wall_s)
        snprintf(steady, sizeof steady, "%.3f",
                 100.0 * (r->cpu_s - start->cpu_s) /
                 (r->wall_s - start->wall_s));
    printf("%-12s %6s %9ld %8.2f %8.1f %8.3f %12.3f %10s\n", mode, delay,
           refreshes, r->wall_s, r->cpu_s * 1e3, 100.0 * r->cpu_s / r->wall_s,
           r->cpu_s * 1e3 / (double)refreshes, steady);
}

int main(void)
{
    const char *b = getenv("BUILD");
    snprintf(top_path, sizeof top_path, "%s/gpumem-top", b && *b ? b : "build");
    if (access(top_path, X_OK) != 0) {
        printf("%s not found: gpumem-top benchmark skipped\n", top_path);
        return 0;
    }
    snprintf(prefix, sizeof prefix, "gmbtop%ld", (long)getpid());
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    atexit(cleanup);
    int live = start_children();
    int seen = count_seen();
    printf("gpumem-top watching %d live processes (prefix %s; one refresh "
           "shows %d)\n", live, prefix, seen);
    printf("%-12s %6s %9s %8s %8s %8s %12s %10s\n", "mode", "delay",
           "refreshes", "wall-s", "cpu-ms", "%core", "cpu-ms/ref",
           "steady-%");
    struct run s_json, s_tty, r;
    if (run_json("1", "1", -1, &s_json) != 0) {
        fprintf(stderr, "gpumem: bench_top: cannot run %s\n", top_path);
        return 1;
    }
    row("json", "-", 1, &s_json, &s_json);
    if (run_json("1", "6", -1, &r) == 0)
        row("json", "1", 6, &r, &s_json);
    if (run_json("0.2", "11", -1, &r) == 0)
        row("json", "0.2", 11, &r, &s_json);
    if (run_tty("0.1", "1", &s_tty) != 0) {
        printf("no pseudo-terminal: curses view not measured\n");
        return 0;
    }
    row("curses", "0.1", 1, &s_tty, &s_tty);
    if (run_tty("1", "5", &r) == 0)
        row("curses", "1", 5, &r, &s_tty);
    printf("(%%core = CPU / wall time of the whole run; steady-%% excludes "
           "start-up: the one-refresh run of the mode subtracted)\n");
    return 0;
}
