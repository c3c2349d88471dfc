/*
 * tests/bench/bench_tel.c — throughput of the telemetry writer
 * (shim/telemetry/ring.c) and cost of a reader snapshot of many segments
 * (tools/lib/reader.c). No assertions: it prints plain-text tables.
 *
 * 1. Producers: 1 thread, 2 threads on one device, 2 threads on two
 *    devices, each writing gm_tel_alloc + gm_tel_free pairs (two ring
 *    records and two stats updates per pair) into one shared segment
 *    created with gm_tel_open in a temporary directory, for about 1 s.
 *    Prints events/s in total, wall ns per event (the inverse) and CPU ns
 *    per event per thread.
 * 2. Reader: 100 short-lived child processes each create a segment
 *    "<prefix>.<pid>" in the temporary directory, write a few events and
 *    close it kept (GPUMEM_KEEP semantics), then exit. The parent times
 *    list + open + validate + snapshot + close of all 100 (and the same
 *    with the liveness check, gm_seg_summary), 50 rounds, and prints the
 *    median, min and max in ms; also listing alone, list + open + close
 *    without a snapshot, and list + open + map (what reading events adds),
 *    to show where the time goes.
 *
 * Invariant: everything created lives in one temporary directory that is
 * removed at exit, on the error paths and on SIGINT/SIGTERM.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim/telemetry/abi.h"
#include "shim/base/clock.h"
#include "shim/telemetry/telemetry.h"
#include "tools/lib/reader.h"

#define RUN_NS 1000000000ull   /* producer run length */
#define BATCH 256u             /* pairs between clock reads */
#define NSEG 100               /* segments for the reader benchmark */
#define ROUNDS 50              /* timed reader rounds */
#define SEG_RING 1024u         /* ring of each reader-benchmark segment */
#define PREFIX "gmbtel"

static char tmpdir[128];
static pid_t seg_pids[NSEG];
static int nseg_pids;

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- temporary directory ------------------------------------------------ */

/* Async-signal-safe: only unlink/rmdir on names built here. */
static void cleanup_dir(void)
{
    char path[256];
    if (tmpdir[0] == '\0')
        return;
    for (int i = 0; i < nseg_pids; i++) {
        snprintf(path, sizeof path, "%s/%s.%ld", tmpdir, PREFIX,
                 (long)seg_pids[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/%s.%ld", tmpdir, PREFIX, (long)getpid());
    unlink(path);
    rmdir(tmpdir);
}

static void on_signal(int sig)
{
    cleanup_dir();
    signal(sig, SIG_DFL);
    raise(sig);
}

static int make_tmpdir(void)
{
    const char *bases[] = { "/dev/shm", "/tmp" };
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
        snprintf(tmpdir, sizeof tmpdir, "%s/gm-bench-tel-XXXXXX", bases[i]);
        if (mkdtemp(tmpdir) != NULL)
            return 0;
    }
    tmpdir[0] = '\0';
    fprintf(stderr, "gpumem: bench_tel: cannot create a temporary "
            "directory: %s\n", strerror(errno));
    return -1;
}

/* ---- producers ----------------------------------------------------------- */

struct producer {
    struct gm_tel *t;
    unsigned dev;
    pthread_barrier_t *bar;
    uint64_t pairs, start_ns, end_ns, cpu_ns;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    const uint64_t size = 1u << 20;
    uint64_t addr = 0x700000000000ull + ((uint64_t)p->dev << 40);
    pthread_barrier_wait(p->bar);
    uint64_t c0 = thread_cpu_ns(), t0 = gm_clock_monotonic_ns(), t = t0, pairs = 0;
    while (t - t0 < RUN_NS) {
        for (unsigned k = 0; k < BATCH; k++) {
            gm_tel_alloc(p->t, p->dev, GM_API_MEM_ALLOC, addr, size, 2000,
                         size, size);
            gm_tel_free(p->t, p->dev, GM_API_MEM_FREE, addr, size, 500, 0);
        }
        pairs += BATCH;
        t = gm_clock_monotonic_ns();
    }
    p->pairs = pairs;
    p->start_ns = t0;
    p->end_ns = t;
    p->cpu_ns = thread_cpu_ns() - c0;
    return NULL;
}

/* One run: n threads on devices devs[i]. Prints one table row. */
static void producer_run(struct gm_tel *t, int n, const unsigned *devs,
                         const char *label)
{
    struct producer pr[2];
    pthread_t th[2];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        pr[i] = (struct producer){ .t = t, .dev = devs[i], .bar = &bar };
        if (pthread_create(&th[i], NULL, produce, &pr[i]) != 0) {
            /* Threads already started wait on the barrier: give up. */
            fprintf(stderr, "gpumem: bench_tel: pthread_create failed\n");
            exit(1);
        }
    }
    uint64_t pairs = 0, t0 = UINT64_MAX, t1 = 0, cpu = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        pairs += pr[i].pairs;
        cpu += pr[i].cpu_ns;
        t0 = pr[i].start_ns < t0 ? pr[i].start_ns : t0;
        t1 = pr[i].end_ns > t1 ? pr[i].end_ns : t1;
    }
    pthread_barrier_destroy(&bar);
    double events = 2.0 * (double)pairs, wall = (double)(t1 - t0);
    printf("%-26s %8d %14.0f %12.1f %14.1f\n", label, n,
           events / (wall / 1e9), wall / events, (double)cpu / events);
}

static int bench_producers(void)
{
    struct gm_tel t;
    struct gm_tel_params p = { .prefix = PREFIX, .shm_dir = tmpdir,
                               .policy_summary = "limit=64GiB",
                               .dev_slots = 2 };
    char err[256];
    int rc = gm_tel_open(&t, &p, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "gpumem: bench_tel: cannot open a segment: %s\n",
                err);
        return -1;
    }
    gm_tel_device(&t, 0, 80ull << 30, 64ull << 30, NULL);
    gm_tel_device(&t, 1, 80ull << 30, 64ull << 30, NULL);
    printf("Telemetry writer: gm_tel_alloc + gm_tel_free pairs, ~1 s per "
           "row, ring of %u records (%s segment)\n", GM_ABI_RING_DEFAULT,
           rc == 0 ? "shared" : "private fallback");
    printf("%-26s %8s %14s %12s %14s\n", "producers", "threads", "events/s",
           "ns/event", "cpu-ns/event");
    static const unsigned same[2] = { 0, 0 }, split[2] = { 0, 1 };
    producer_run(&t, 1, same, "one thread");
    producer_run(&t, 2, same, "two threads, one device");
    producer_run(&t, 2, split, "two threads, two devices");
    struct gm_snapshot snap;
    if (gm_tel_snapshot(&t, &snap) >= 0)
        printf("(ring head %llu, events no longer held %llu)\n",
               (unsigned long long)snap.ring_head,
               (unsigned long long)gm_snapshot_events_lost(&snap));
    gm_tel_close(&t, false);
    return 0;
}

/* ---- reader -------------------------------------------------------------- */

/* Child: one kept segment with a little activity, then exit. */
static void child_segment(void)
{
    struct gm_tel t;
    struct gm_tel_params p = { .prefix = PREFIX, .shm_dir = tmpdir,
                               .ring_events = SEG_RING,
                               .policy_summary = "limit=8GiB mode=grow" };
    char err[256];
    if (gm_tel_open(&t, &p, err, sizeof err) != 0)
        _exit(1);
    gm_tel_device(&t, 0, 80ull << 30, 8ull << 30, NULL);
    uint64_t used = 0;
    for (uint64_t i = 0; i < 8; i++) {
        used += (i + 1) << 20;
        gm_tel_alloc(&t, 0, GM_API_MEM_ALLOC, 0x10000000 * (i + 1),
                     (i + 1) << 20, 1500 + i, used, used);
    }
    used -= 1u << 20;
    gm_tel_free(&t, 0, GM_API_MEM_FREE, 0x10000000, 1u << 20, 400, used);
    gm_tel_close(&t, true);
    _exit(0);
}

static int make_segments(void)
{
    fflush(stdout);   /* children must not inherit unwritten output */
    fflush(stderr);
    for (int i = 0; i < NSEG; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "gpumem: bench_tel: fork: %s\n", strerror(errno));
            break;
        }
        if (pid == 0)
            child_segment();
        seg_pids[nseg_pids++] = pid;
    }
    int ok = 0;
    for (int i = 0; i < nseg_pids; i++) {
        int st;
        if (waitpid(seg_pids[i], &st, 0) == seg_pids[i] && WIFEXITED(st) &&
            WEXITSTATUS(st) == 0)
            ok++;
    }
    return ok;
}

/* What a reader round does with each listed segment. */
enum step { LIST_ONLY, OPEN_CLOSE, MAPPED, SNAPSHOT, SUMMARY };

/* One round: list, then per `step` open (validates), snapshot or summary,
 * close. Returns the number of segments handled, or -1 when the directory
 * is unreadable. */
static int read_round(enum step step)
{
    int pids[NSEG * 2];
    int n = gm_reader_list(tmpdir, PREFIX, pids, NSEG * 2);
    if (n < 0)
        return -1;
    if (n > NSEG * 2)
        n = NSEG * 2;
    if (step == LIST_ONLY)
        return n;
    int good = 0;
    for (int i = 0; i < n; i++) {
        struct gm_seg s;
        char err[256];
        if (gm_seg_open(&s, tmpdir, PREFIX, pids[i], err, sizeof err) != 0)
            continue;
        int r = 0;
        if (step == SUMMARY) {
            struct gm_proc pr;
            r = gm_seg_summary(&s, &pr);
        } else if (step == MAPPED) {
            /* What reading events costs on top: the whole file mapped,
             * the header touched through the mapping, unmapped at close. */
            struct gm_cursor c;
            gm_cursor_init(&c, &s, true);
        } else if (step == SNAPSHOT) {
            struct gm_snapshot snap;
            r = gm_seg_snapshot(&s, &snap);
        }
        if (r == 0)
            good++;
        gm_seg_close(&s);
    }
    return good;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int reader_row(enum step step, const char *label)
{
    uint64_t t[ROUNDS];
    int good = read_round(step);   /* warm up: page cache, SIGBUS hook */
    for (int r = 0; r < ROUNDS; r++) {
        uint64_t t0 = gm_clock_monotonic_ns();
        good = read_round(step);
        t[r] = gm_clock_monotonic_ns() - t0;
        if (good < 0)
            return -1;
    }
    qsort(t, ROUNDS, sizeof t[0], cmp_u64);
    printf("%-34s %8d %10.3f %10.3f %10.3f\n", label, good,
           (double)t[ROUNDS / 2] / 1e6, (double)t[0] / 1e6,
           (double)t[ROUNDS - 1] / 1e6);
    return 0;
}

static int bench_reader(void)
{
    int made = make_segments();
    printf("Reader: %d kept segments of exited processes in %s (%d rounds)\n",
           made, tmpdir, ROUNDS);
    printf("%-34s %8s %10s %10s %10s\n", "operation", "segments", "median-ms",
           "min-ms", "max-ms");
    if (reader_row(LIST_ONLY, "list (gm_reader_list)") != 0 ||
        reader_row(OPEN_CLOSE, "list+open+validate+close") != 0 ||
        reader_row(MAPPED, "list+open+validate+map+close") != 0 ||
        reader_row(SNAPSHOT, "list+open+validate+snapshot+close") != 0 ||
        reader_row(SUMMARY, "... + liveness (gm_seg_summary)") != 0) {
        fprintf(stderr, "gpumem: bench_tel: cannot read %s\n", tmpdir);
        return -1;
    }
    return 0;
}

int main(void)
{
    if (make_tmpdir() != 0)
        return 1;
    atexit(cleanup_dir);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    int rc = bench_producers();
    printf("\n");
    if (rc == 0)
        rc = bench_reader();
    fflush(stdout);
    return rc == 0 ? 0 : 1;
}
