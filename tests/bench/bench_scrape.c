/*
 * tests/bench/bench_scrape.c — the time of one exporter scrape over 200
 * live processes (target: under 50 ms on the 2-core machine). No
 * assertions: it prints a plain-text table.
 *
 * 200 child processes each create a live segment "<prefix>.<pid>" in
 * /dev/shm under a prefix of their own (gmbscr<pid of this program>),
 * charge a few allocations (every third child on two devices), then wait
 * until told to stop, so every scrape finds 200 live writers (liveness
 * checked, as in production). The program then runs gm_metrics_scrape,
 * the exporter's whole scrape (listing, open, validation, snapshot,
 * liveness, text), 30 times in each format and prints the wall time of
 * one scrape (min, median, max), the CPU time (user + system) of this
 * process per scrape, which other programs' load does not inflate as
 * much, and the size of its text.
 *
 * Invariants: the children block SIGTERM/SIGINT/SIGHUP and take them with
 * sigtimedwait, closing (unlinking) their segment before they exit; they
 * get SIGTERM when this program dies (PR_SET_PDEATHSIG). At exit and on
 * SIGINT/SIGTERM the children are stopped and their files removed.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim/base/clock.h"
#include "shim/telemetry/abi.h"
#include "shim/telemetry/telemetry.h"
#include "tools/lib/metrics.h"
#include "tests/bench/kids.h"

#define NPROC 200
#define ROUNDS 30
#define SHM "/dev/shm"

static pid_t kids[NPROC];
static int nkids;
static char prefix[40];

static void child_main(int wfd, pid_t parent, int idx)
{
    sigset_t set;
    gm_kid_detach(parent, &set);
    struct gm_tel t;
    struct gm_tel_params p = { .prefix = prefix, .ring_events = 1024,
                               .policy_summary = "limit=8GiB mode=grow",
                               .shm_dir = SHM };
    char err[256];
    if (gm_tel_open(&t, &p, err, sizeof err) != 0) {
        (void)!write(wfd, "E", 1);
        _exit(1);
    }
    unsigned ndev = idx % 3 == 0 ? 2 : 1;
    for (unsigned d = 0; d < ndev; d++) {
        uint64_t used = 0, sz = 32ull << 20;
        gm_tel_device(&t, d, 80ull << 30, 8ull << 30, NULL);
        for (int i = 0; i <= idx % 8; i++) {
            used += sz;
            gm_tel_alloc(&t, d, GM_API_MEM_ALLOC, 0x10000000ull * (i + 1),
                         sz, 500u << (i % 6), used, used);
        }
    }
    (void)!write(wfd, "K", 1);
    close(wfd);
    while (sigwaitinfo(&set, NULL) < 0 && errno == EINTR)
        ;
    gm_tel_close(&t, false);
    _exit(0);
}

static int start_children(void)
{
    return gm_kids_start(kids, &nkids, NPROC, child_main);
}

static void stop_children(void)
{
    for (int i = 0; i < nkids; i++)
        kill(kids[i], SIGTERM);
    for (int i = 0; i < nkids; i++)
        waitpid(kids[i], NULL, 0);
    char path[128];
    for (int i = 0; i < nkids; i++) {   /* what a killed child left */
        snprintf(path, sizeof path, SHM "/%s.%ld", prefix, (long)kids[i]);
        unlink(path);
    }
    nkids = 0;
}

static void on_signal(int sig)
{
    for (int i = 0; i < nkids; i++)
        kill(kids[i], SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void bench(enum gm_expo_fmt fmt, const char *name,
                  const struct gm_metrics_opts *o)
{
    uint64_t ns[ROUNDS];
    size_t bytes = 0;
    unsigned segs = 0, skipped = 0;
    struct gm_metrics_totals tot;
    memset(&tot, 0, sizeof tot);
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    for (int r = 0; r < ROUNDS; r++) {
        struct gm_expo_buf b;
        struct gm_metrics_result res;
        char err[256];
        gm_expo_buf_init(&b, 0);
        uint64_t t0 = gm_clock_monotonic_ns();
        if (gm_metrics_scrape(o, &tot, fmt, &b, &res, err, sizeof err) != 0)
            fprintf(stderr, "bench_scrape: %s\n", err);
        ns[r] = gm_clock_monotonic_ns() - t0;
        bytes = b.len;
        segs = res.segments;
        skipped = res.skipped;
        gm_expo_buf_free(&b);
    }
    getrusage(RUSAGE_SELF, &ru1);
    double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec +
                          ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1e3 +
                 (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec +
                          ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e3;
    qsort(ns, ROUNDS, sizeof ns[0], cmp_u64);
    printf("%-12s %9u %8u %10zu %9.2f %9.2f %9.2f %9.2f\n", name, segs,
           skipped, bytes, (double)ns[0] / 1e6, (double)ns[ROUNDS / 2] / 1e6,
           (double)ns[ROUNDS - 1] / 1e6, cpu / ROUNDS);
}

int main(void)
{
    snprintf(prefix, sizeof prefix, "gmbscr%ld", (long)getpid());
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    int ok = start_children();
    if (ok != NPROC) {
        fprintf(stderr, "bench_scrape: %d of %d children have a segment\n",
                ok, NPROC);
        stop_children();
        return 1;
    }
    struct gm_metrics_opts o;
    gm_metrics_opts_default(&o);
    o.dir = SHM;
    o.prefix = prefix;
    printf("One exporter scrape (gm_metrics_scrape) of %d live processes, "
           "%d rounds, ms\n", NPROC, ROUNDS);
    printf("%-12s %9s %8s %10s %9s %9s %9s %9s\n", "format", "segments",
           "skipped", "bytes", "min", "median", "max", "cpu/scr");
    bench(GM_EXPO_PROM, "prometheus", &o);
    bench(GM_EXPO_OPENMETRICS, "openmetrics", &o);
    o.hami = true;
    bench(GM_EXPO_PROM, "+hami", &o);
    stop_children();
    return 0;
}
