/*
 * tests/integ/test_tools.c — the `gpumem` subcommands (run, ps, log,
 * report, gc) and `gpumem-top --once/--json` against gpumem-trainsim
 * running under the shim on the simulated driver, and their view of shared
 * budgets: group segments made by forked children that join a group
 * through shim/group/group.h directly (libgmcore.a), then are killed;
 * copies of a segment under other pids' names, which no tool takes for
 * the process their header names; and a used of limit whose percentage
 * wraps in 64 bits, shown capped.
 *
 * Each case uses its own segment prefix (GPUMEM_SHM_PREFIX), so cases and
 * other programs never see each other's segments; every segment a case
 * made is removed at its end. Figures printed by the tools are compared
 * with what the reader library reads from the same segment, and with the
 * counts trainsim itself prints. BUILD (default "build") names the build
 * directory.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gm_spawn.h"
#include "shim/group/group.h"
#include "tools/lib/reader.h"

#define OUT_CAP (4 << 20)

static char out[OUT_CAP];
static char prefix[64];
static char prefix_env[96];

/* ---- helpers ------------------------------------------------------------------ */

static void new_prefix(const char *tag)
{
    static int n;
    snprintf(prefix, sizeof prefix, "gmtt%s%d_%d", tag, (int)getpid(), n++);
    snprintf(prefix_env, sizeof prefix_env, "GPUMEM_SHM_PREFIX=%s", prefix);
}

static int unlink_group(void *arg, const char *path, const char *name)
{
    (void)arg;
    (void)name;
    unlink(path);
    return 0;
}

static void cleanup(void)
{
    gm_group_list(GM_READER_DEFAULT_DIR, prefix, unlink_group, NULL);
    int pids[256];
    int n = gm_reader_list(GM_READER_DEFAULT_DIR, prefix, pids, 256);
    for (int i = 0; i < n && i < 256; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s.%d", GM_READER_DEFAULT_DIR, prefix,
                 pids[i]);
        unlink(path);
    }
}

static const char *gpumem(void) { return gm_bpath("gpumem"); }
static const char *trainsim(void) { return gm_bpath("gpumem-trainsim"); }

/* gpumem (or another tool) without the shim; output in `out`. */
static int tool(const char *const *argv)
{
    const char *env[] = { prefix_env, NULL };
    return gm_run(env, 0, argv, out, OUT_CAP);
}

/* trainsim under the shim, segment kept; returns its pid (from the only
 * segment of the prefix) and the allocation/free counts it printed. */
static int kept_trainsim(const char *limit, const char *steps,
                         uint64_t *allocs, uint64_t *frees, int *status)
{
    char lim[64];
    snprintf(lim, sizeof lim, "GPUMEM_LIMIT=%s", limit);
    const char *env[] = { prefix_env, "GPUMEM_KEEP=1", lim, "SIMCUDA_LATENCY",
                          "GPUMEM_REPORT", NULL };
    const char *argv[] = { trainsim(), "--steps", steps, "--quiet", NULL };
    int st = gm_run(env, 1, argv, out, OUT_CAP);
    if (status)
        *status = st;
    else
        ck_assert_msg(st == 0, "trainsim: %d: %s", st, out);
    const char *d = strstr(out, "done:");
    unsigned long long a = 0, f = 0;
    if (d && allocs)
        ck_assert_int_eq(sscanf(d, "done: %*d steps, %llu allocs, %llu frees",
                                &a, &f), 2);
    if (allocs)
        *allocs = a;
    if (frees)
        *frees = f;
    int pids[4];
    ck_assert_int_eq(gm_reader_list(GM_READER_DEFAULT_DIR, prefix, pids, 4),
                     1);
    return pids[0];
}

/* A long trainsim under the shim in the background (in group `group`
 * when not NULL). */
static pid_t live_trainsim_in(const char *group)
{
    char abs[2048], lib[2200], sim[2200];
    ck_assert_ptr_nonnull(realpath(gm_build_dir(), abs));
    snprintf(lib, sizeof lib, "%s/libgpumem.so", abs);
    snprintf(sim, sizeof sim, "%s/sim", abs);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        setenv("LD_PRELOAD", lib, 1);
        setenv("LD_LIBRARY_PATH", sim, 1);
        setenv("GPUMEM_SHM_PREFIX", prefix, 1);
        setenv("GPUMEM_LIMIT", "3G", 1);
        setenv("SIMCUDA_LATENCY", "2ms", 1);
        unsetenv("GPUMEM_KEEP");
        if (group) {
            setenv("GPUMEM_GROUP", group, 1);
            setenv("GPUMEM_GROUP_LIMIT", "6G", 1);
            setenv("GPUMEM_PRIORITY", "low", 1);
        } else {
            unsetenv("GPUMEM_GROUP");
        }
        execl(trainsim(), trainsim(), "--steps", "100000", "--quiet",
              (char *)NULL);
        _exit(127);
    }
    struct gm_seg s;
    char err[256];
    for (int i = 0; i < 500; i++) {
        if (gm_seg_open(&s, GM_READER_DEFAULT_DIR, prefix, pid, err,
                        sizeof err) == 0) {
            struct gm_snapshot *snap = malloc(sizeof *snap);
            int ok = gm_seg_snapshot(&s, snap) >= 0 && snap->dev_count > 0 &&
                     snap->dev[0].allocs > 0;
            free(snap);
            gm_seg_close(&s);
            if (ok)
                return pid;
        }
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    ck_abort_msg("no segment from the live trainsim");
    return -1;
}

static pid_t live_trainsim(void)
{
    return live_trainsim_in(NULL);
}

static void stop(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static struct gm_snapshot *snap_of(int pid)
{
    static struct gm_snapshot snap;
    struct gm_seg s;
    char err[256];
    ck_assert_msg(gm_seg_open(&s, GM_READER_DEFAULT_DIR, prefix, pid, err,
                              sizeof err) == 0, "%s", err);
    ck_assert_int_ge(gm_seg_snapshot(&s, &snap), 0);
    gm_seg_close(&s);
    return &snap;
}

/* The value of "key": after `from` in text; asserts it exists. */
static uint64_t num_after(const char *from, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(from, pat);
    ck_assert_msg(p != NULL, "no %s in %.300s", key, from);
    return strtoull(p + strlen(pat), NULL, 10);
}

/* The JSON object of pid in a ps/top document. */
static const char *obj_of(const char *doc, int pid)
{
    char pat[64];
    snprintf(pat, sizeof pat, "{\"pid\":%d,", pid);
    const char *p = strstr(doc, pat);
    ck_assert_msg(p != NULL, "pid %d not in %.400s", pid, doc);
    return p;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static bool exists(int pid)
{
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s.%d", GM_READER_DEFAULT_DIR, prefix,
             pid);
    return stat(path, &st) == 0;
}

/* ---- ps / top -------------------------------------------------------------------- */

START_TEST(ps_json_matches_kept_segment)
{
    new_prefix("ps");
    int pid = kept_trainsim("2G", "5", NULL, NULL, NULL);
    const struct gm_snapshot *s = snap_of(pid);
    const char *argv[] = { gpumem(), "ps", "--json", NULL };
    ck_assert_int_eq(tool(argv), 0);
    const char *o = obj_of(out, pid);
    ck_assert_uint_eq(num_after(o, "used"), s->dev[0].used);
    ck_assert_uint_eq(num_after(o, "peak"), s->dev[0].peak);
    ck_assert_uint_eq(num_after(o, "limit"), 2ull << 30);
    ck_assert_uint_eq(num_after(o, "limit"), s->dev[0].limit);
    ck_assert_uint_eq(num_after(o, "context"), s->dev[0].context_bytes);
    ck_assert_uint_eq(num_after(o, "allocs"), s->dev[0].allocs);
    ck_assert_ptr_nonnull(strstr(o, "\"state\":\"kept\""));
    /* text form: one row with the pid and the state */
    const char *argt[] = { gpumem(), "ps", "--prefix", prefix, NULL };
    ck_assert_int_eq(gm_run(NULL, 0, argt, out, OUT_CAP), 0);
    char pat[32];
    snprintf(pat, sizeof pat, "%7d ", pid);
    ck_assert_ptr_nonnull(strstr(out, "PID"));
    ck_assert_ptr_nonnull(strstr(out, pat));
    ck_assert_ptr_nonnull(strstr(out, " kept "));
    cleanup();
}
END_TEST

START_TEST(ps_and_top_show_live_process)
{
    new_prefix("live");
    pid_t pid = live_trainsim();
    const char *argv[] = { gpumem(), "ps", "--json", NULL };
    ck_assert_int_eq(tool(argv), 0);
    const char *o = obj_of(out, pid);
    ck_assert_ptr_nonnull(strstr(o, "\"state\":\"live\""));
    ck_assert_uint_eq(num_after(o, "limit"), 3ull << 30);
    uint64_t used = num_after(o, "used"), peak = num_after(o, "peak");
    ck_assert_uint_gt(used, 0);
    ck_assert_uint_ge(peak, used);
    const char *argt[] = { gm_bpath("gpumem-top"), "--json", "-n", "1",
                           NULL };
    ck_assert_int_eq(tool(argt), 0);
    o = obj_of(out, pid);
    ck_assert_uint_eq(num_after(o, "limit"), 3ull << 30);
    ck_assert_ptr_nonnull(strstr(out, "\"devices\":[{\"device\":0"));
    const char *argo[] = { gm_bpath("gpumem-top"), "--once", NULL };
    ck_assert_int_eq(tool(argo), 0);
    char pat[32];
    snprintf(pat, sizeof pat, "%7d ", (int)pid);
    ck_assert_ptr_nonnull(strstr(out, pat));
    ck_assert_ptr_nonnull(strstr(out, " live "));
    stop(pid);
    cleanup();
}
END_TEST

/* ---- log ------------------------------------------------------------------------- */

/* Free events (JSON lines) whose lat_ns is 0. */
static uint64_t count_free_lat0(const char *s)
{
    uint64_t n = 0;
    for (const char *l = s; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1
                                                        : NULL) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        const char *k = strstr(l, "\"kind\":\"free\"");
        const char *z = strstr(l, "\"lat_ns\":0,");
        if (!z)
            z = strstr(l, "\"lat_ns\":0}");
        if (k && k < l + len && z && z < l + len)
            n++;
    }
    return n;
}

START_TEST(log_jsonl_has_every_allocation)
{
    new_prefix("log");
    uint64_t allocs, frees;
    int pid = kept_trainsim("2G", "8", &allocs, &frees, NULL);
    ck_assert_uint_gt(allocs, 0);
    char spid[16];
    snprintf(spid, sizeof spid, "%d", pid);
    const char *argv[] = { gpumem(), "log", "--format", "jsonl", spid, NULL };
    ck_assert_int_eq(tool(argv), 0);
    ck_assert_uint_eq(count(out, "\"kind\":\"alloc\""), allocs);
    ck_assert_uint_eq(count(out, "\"kind\":\"free\""), frees);
    ck_assert_uint_eq(count(out, "\"kind\":\"lost\""), 0);
    /* Frees are timed too: not every free event can say 0 ns. */
    ck_assert_uint_lt(count_free_lat0(out), frees);
    ck_assert_uint_eq(count(out, "\"kind\":\"process\""), 1);
    const char *argk[] = { gpumem(), "log", "--kinds", "free", "--format=csv",
                           NULL };
    ck_assert_int_eq(tool(argk), 0);
    ck_assert_uint_eq(count(out, ",alloc,"), 0);
    ck_assert_uint_eq(count(out, ",free,"), frees);
    const char *argb[] = { gpumem(), "log", "--kinds", "bogus", NULL };
    ck_assert_int_eq(tool(argb), 2);
    cleanup();
}
END_TEST

START_TEST(log_follow_waits_for_process)
{
    new_prefix("fol");
    char path[] = "/tmp/gmtt_followXXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    pid_t lp = fork();
    ck_assert_int_ge(lp, 0);
    if (lp == 0) {
        dup2(fd, 1);
        setenv("GPUMEM_SHM_PREFIX", prefix, 1);
        unsetenv("LD_PRELOAD");
        execl(gpumem(), gpumem(), "log", "-f", "--format", "jsonl",
              (char *)NULL);
        _exit(127);
    }
    close(fd);
    usleep(150000);
    uint64_t allocs, frees;
    kept_trainsim("2G", "6", &allocs, &frees, NULL);
    int st = -1;
    for (int i = 0; i < 300 && waitpid(lp, &st, WNOHANG) == 0; i++)
        usleep(10000);
    if (st == -1) {
        stop(lp);
        ck_abort_msg("log -f did not end after the process exited");
    }
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    FILE *f = fopen(path, "r");
    size_t n = fread(out, 1, OUT_CAP - 1, f);
    out[n] = '\0';
    fclose(f);
    unlink(path);
    ck_assert_uint_eq(count(out, "\"kind\":\"alloc\""), allocs);
    ck_assert_uint_eq(count(out, "\"kind\":\"free\""), frees);
    cleanup();
}
END_TEST

/* ---- report ---------------------------------------------------------------------- */

/* `gpumem log --format jsonl PID` into a file, checked by `check` when
 * not NULL (out holds the log), then `gpumem report --from FILE --json`
 * into out. */
static void report_from_log(const char *spid, void (*check)(void))
{
    char trace[] = "/tmp/gmtt_traceXXXXXX";
    int fd = mkstemp(trace);
    ck_assert_int_ge(fd, 0);
    const char *argl[] = { gpumem(), "log", "--format", "jsonl", spid, NULL };
    ck_assert_int_eq(tool(argl), 0);
    if (check != NULL)
        check();
    ck_assert_int_eq(write(fd, out, strlen(out)), (ssize_t)strlen(out));
    close(fd);
    const char *argf[] = { gpumem(), "report", "--from", trace, "--json",
                           NULL };
    ck_assert_int_eq(tool(argf), 0);
    unlink(trace);
}

/* One record for the four leaked blocks, none of them a free. */
static void log_ctx_freed(void)
{
    ck_assert_uint_eq(count(out, "\"kind\":\"ctx_freed\""), 1);
    ck_assert_ptr_nonnull(strstr(out, "\"kind\":\"ctx_freed\",\"api\":"
                                      "\"context end\",\"dev\":0,"));
    ck_assert_uint_eq(count(out, "\"api\":\"context end\""), 1);
}

START_TEST(report_json_and_trace_agree)
{
    new_prefix("rep");
    uint64_t allocs, frees;
    int pid = kept_trainsim("2G", "7", &allocs, &frees, NULL);
    const struct gm_snapshot *s = snap_of(pid);
    char spid[16];
    snprintf(spid, sizeof spid, "%d", pid);
    const char *argv[] = { gpumem(), "report", "--json", spid, NULL };
    ck_assert_int_eq(tool(argv), 0);
    static char seg_json[OUT_CAP];
    memcpy(seg_json, out, strlen(out) + 1);
    ck_assert_uint_eq(num_after(seg_json, "allocs"), allocs);
    ck_assert_uint_eq(num_after(seg_json, "frees"), frees);
    ck_assert_uint_eq(num_after(seg_json, "peak_bytes"), s->dev[0].peak);
    ck_assert_uint_eq(num_after(seg_json, "limit_bytes"), 2ull << 30);

    report_from_log(spid, NULL);
    static const char *const keys[] = { "allocs", "frees", "peak_bytes",
        "limit_bytes", "used_bytes", "context_bytes", "live_allocs",
        "live_bytes", "total_allocated_bytes", "alloc_latency_p99_ns" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(num_after(out, keys[i]) == num_after(seg_json, keys[i]),
                      "%s differs: trace %s vs segment %s", keys[i], out,
                      seg_json);
    const char *argt[] = { gpumem(), "report", spid, NULL };
    ck_assert_int_eq(tool(argt), 0);
    ck_assert_ptr_nonnull(strstr(out, "gpumem: device 0: peak"));
    cleanup();
}
END_TEST

/* A device without a limit is "limit_bytes":null in the report's JSON
 * (as in gpumem ps --json), never 0. */
START_TEST(report_json_writes_no_limit_as_null)
{
    new_prefix("rnl");
    const char *env[] = { prefix_env, "GPUMEM_KEEP=1", "GPUMEM_LIMIT",
                          "SIMCUDA_LATENCY", "GPUMEM_REPORT", NULL };
    const char *argv[] = { trainsim(), "--steps", "3", "--quiet", NULL };
    ck_assert_int_eq(gm_run(env, 1, argv, out, OUT_CAP), 0);
    int pids[4];
    ck_assert_int_eq(gm_reader_list(GM_READER_DEFAULT_DIR, prefix, pids, 4),
                     1);
    char spid[16];
    snprintf(spid, sizeof spid, "%d", pids[0]);
    const char *arg[] = { gpumem(), "report", "--json", spid, NULL };
    ck_assert_int_eq(tool(arg), 0);
    ck_assert_msg(strstr(out, "\"limit_bytes\":null,") != NULL &&
                  strstr(out, "\"limit_bytes\":0") == NULL, "%s", out);
    cleanup();
}
END_TEST

/* What a context's end freed (trainsim leaks, then releases its primary
 * context) reads the same from the segment and from its event log. */
START_TEST(report_context_freed_from_segment_and_trace)
{
    new_prefix("rcf");
    const char *env[] = { prefix_env, "GPUMEM_KEEP=1", "GPUMEM_LIMIT=2G",
                          "SIMCUDA_LATENCY", "GPUMEM_REPORT", NULL };
    const char *argv[] = { trainsim(), "--steps", "4", "--leak", "1M",
                           "--quiet", NULL };
    ck_assert_int_eq(gm_run(env, 1, argv, out, OUT_CAP), 0);
    int pids[4];
    ck_assert_int_eq(gm_reader_list(GM_READER_DEFAULT_DIR, prefix, pids, 4), 1);
    char spid[16];
    snprintf(spid, sizeof spid, "%d", pids[0]);
    const char *argj[] = { gpumem(), "report", "--json", spid, NULL };
    ck_assert_int_eq(tool(argj), 0);
    ck_assert_uint_eq(num_after(out, "context_freed_bytes"), 4ull << 20);
    ck_assert_uint_eq(num_after(out, "live_allocs"), 0);
    report_from_log(spid, log_ctx_freed);
    ck_assert_uint_eq(num_after(out, "context_freed_bytes"), 4ull << 20);
    ck_assert_uint_eq(num_after(out, "live_allocs"), 0);
    const char *argt[] = { gpumem(), "report", spid, NULL };
    ck_assert_int_eq(tool(argt), 0);
    ck_assert_msg(strstr(out, "4.0 MiB never freed (freed with its context)"),
                  "%s", out);
    const char *argx[] = { gpumem(), "log", spid, NULL };
    ck_assert_int_eq(tool(argx), 0);
    ck_assert_msg(strstr(out, "ctx_freed  4 allocations (4.0 MiB) the program "
                              "never freed, freed with its context"), "%s", out);
    cleanup();
}
END_TEST

/* Tags balance: every <x ...> has its </x>, in order; returns depth 0. */
static bool balanced(const char *p)
{
    char stack[64][32];
    int depth = 0;
    while ((p = strchr(p, '<')) != NULL) {
        bool close = p[1] == '/';
        const char *n = p + 1 + close;
        size_t len = strcspn(n, " \t\n/>");
        const char *end = strchr(p, '>');
        if (end == NULL || len == 0 || len >= 32)
            return false;
        bool self = end[-1] == '/';
        if (close) {
            if (depth == 0 || strncmp(stack[depth - 1], n, len) != 0 ||
                stack[depth - 1][len] != '\0')
                return false;
            depth--;
        } else if (!self) {
            if (depth == 64)
                return false;
            memcpy(stack[depth], n, len);
            stack[depth++][len] = '\0';
        }
        p = end + 1;
    }
    return depth == 0;
}

START_TEST(report_svg_is_well_formed)
{
    new_prefix("svg");
    int st;
    /* 520M: context + setup fit, the first step's activations do not. */
    int pid = kept_trainsim("520M", "5", NULL, NULL, &st);
    ck_assert_int_eq(st, 3);
    char spid[16], svg[] = "/tmp/gmtt_svgXXXXXX";
    snprintf(spid, sizeof spid, "%d", pid);
    int fd = mkstemp(svg);
    ck_assert_int_ge(fd, 0);
    close(fd);
    const char *argv[] = { gpumem(), "report", spid, "--svg", svg, NULL };
    ck_assert_int_eq(tool(argv), 0);
    ck_assert_ptr_nonnull(strstr(out, "1 refused"));
    FILE *f = fopen(svg, "r");
    size_t n = fread(out, 1, OUT_CAP - 1, f);
    out[n] = '\0';
    fclose(f);
    unlink(svg);
    ck_assert(strncmp(out, "<svg", 4) == 0);
    ck_assert(n > 7 && strcmp(out + n - 7, "</svg>\n") == 0);
    ck_assert(balanced(out));
    ck_assert_ptr_nonnull(strstr(out, "class=\"limit\""));
    ck_assert_ptr_nonnull(strstr(out, "limit 520.0 MiB"));
    ck_assert_ptr_nonnull(strstr(out, "class=\"oom\""));
    ck_assert_ptr_nonnull(strstr(out, "class=\"peak\""));
    ck_assert_ptr_nonnull(strstr(out, "class=\"used\""));
    ck_assert_ptr_nonnull(strstr(out, "time since process start (s)"));
    ck_assert_ptr_nonnull(strstr(out, "device memory used (MiB)"));
    cleanup();
}
END_TEST

/* ---- run ----------------------------------------------------------------------- */

START_TEST(run_passes_policy_and_status)
{
    new_prefix("run");
    const char *argv[] = { gpumem(), "run", "--limit", "1G", "--", "sh",
                           "-c", "echo $GPUMEM_LIMIT; exit 7", NULL };
    ck_assert_int_eq(tool(argv), 7);
    ck_assert_str_eq(out, "1G\n");
    const char *argp[] = { gpumem(), "run", "--mode=staged", "--report",
                           "--", "sh", "-c",
                           "echo $GPUMEM_MODE $GPUMEM_REPORT $LD_PRELOAD",
                           NULL };
    const char *env[] = { "LD_PRELOAD=/nonexistent/libother.so", NULL };
    ck_assert_int_eq(gm_run(env, 0, argp, out, OUT_CAP), 0);
    ck_assert_ptr_nonnull(strstr(out, "staged 1 /"));
    ck_assert_ptr_nonnull(strstr(out, "/libgpumem.so:/nonexistent/"
                                      "libother.so"));
    const char *argt[] = { gpumem(), "run", "--no-telemetry", "--", "sh",
                           "-c", "echo telemetry=$GPUMEM_TELEMETRY", NULL };
    ck_assert_int_eq(tool(argt), 0);
    ck_assert_str_eq(out, "telemetry=0\n");
    /* ... which the report option contradicts: refused before running. */
    const char *argr[] = { gpumem(), "run", "--no-telemetry", "--report",
                           "--", "true", NULL };
    ck_assert_int_eq(tool(argr), 2);
}
END_TEST

START_TEST(run_refuses_bad_policy_and_usage)
{
    new_prefix("bad");
    const char *argv[] = { gpumem(), "run", "--limit", "4gigs", "--", "sh",
                           "-c", "echo RAN", NULL };
    ck_assert_int_eq(tool(argv), 2);
    ck_assert_ptr_null(strstr(out, "RAN"));
    ck_assert_ptr_nonnull(strstr(out, "GPUMEM_LIMIT"));
    const char *argn[] = { gpumem(), "run", "--limit", "1G", NULL };
    ck_assert_int_eq(tool(argn), 2);
    const char *argo[] = { gpumem(), "run", "--bogus", "--", "true", NULL };
    ck_assert_int_eq(tool(argo), 2);
    const char *argm[] = { gpumem(), "run", "--", "/nonexistent/prog", NULL };
    ck_assert_int_eq(tool(argm), 127);
}
END_TEST

START_TEST(run_preloads_the_shim)
{
    new_prefix("pre");
    const char *argv[] = { gpumem(), "run", "--limit", "2G", "--keep",
                           "--prefix", prefix, "--", trainsim(), "--steps",
                           "2", "--quiet", NULL };
    /* no LD_PRELOAD from the test: gpumem run must add it */
    ck_assert_int_eq(gm_run(NULL, 0, argv, out, OUT_CAP), 0);
    int pids[4];
    ck_assert_int_eq(gm_reader_list(GM_READER_DEFAULT_DIR, prefix, pids, 4),
                     1);
    const struct gm_snapshot *s = snap_of(pids[0]);
    ck_assert_uint_eq(s->dev[0].limit, 2ull << 30);
    ck_assert_uint_gt(s->dev[0].allocs, 0);
    cleanup();
}
END_TEST

/* ---- gc -------------------------------------------------------------------------- */

START_TEST(gc_removes_dead_keeps_live)
{
    new_prefix("gc");
    int dead = kept_trainsim("2G", "2", NULL, NULL, NULL);
    pid_t live = live_trainsim();
    const char *argd[] = { gpumem(), "gc", "--dry-run", NULL };
    ck_assert_int_eq(tool(argd), 0);
    ck_assert(exists(dead) && exists(live));
    char pat[160];
    snprintf(pat, sizeof pat, "would remove %s/%s.%d", GM_READER_DEFAULT_DIR,
             prefix, dead);
    ck_assert_ptr_nonnull(strstr(out, pat));
    const char *argv[] = { gpumem(), "gc", NULL };
    ck_assert_int_eq(tool(argv), 0);
    ck_assert(!exists(dead));
    ck_assert(exists(live));
    snprintf(pat, sizeof pat, ".%d", (int)live);
    ck_assert_ptr_null(strstr(out, pat));
    stop(live);
    /* killed: now dead, so gc takes it too */
    ck_assert_int_eq(tool(argv), 0);
    ck_assert(!exists(live));
    cleanup();
}
END_TEST

/* ---- a segment under another process's name -------------------------------------- */

/* Copies the segment of pid `from` to the name of pid `to`, with the
 * header's pid set to header_pid (0: left as it is, a plain cp). */
static void copy_segment(int from, int to, uint32_t header_pid)
{
    char src[256], dst[256];
    snprintf(src, sizeof src, "%s/%s.%d", GM_READER_DEFAULT_DIR, prefix, from);
    snprintf(dst, sizeof dst, "%s/%s.%d", GM_READER_DEFAULT_DIR, prefix, to);
    FILE *f = fopen(src, "rb");
    ck_assert_ptr_nonnull(f);
    static unsigned char img[16 << 20];
    size_t n = fread(img, 1, sizeof img, f);
    fclose(f);
    ck_assert_uint_gt(n, sizeof(struct gm_abi_header));
    if (header_pid != 0)
        memcpy(img + offsetof(struct gm_abi_header, pid), &header_pid,
               sizeof header_pid);
    int fd = open(dst, O_CREAT | O_EXCL | O_WRONLY, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, img, n), (ssize_t)n);
    close(fd);
}

static int gone_pid(void)
{
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0)
        _exit(0);
    waitpid(c, NULL, 0);
    return (int)c;
}

START_TEST(copied_segment_is_not_its_names)
{
    new_prefix("cp");
    int k = kept_trainsim("2G", "2", NULL, NULL, NULL);
    int gone = gone_pid(), gone1 = gone_pid(), me = (int)getpid();
    copy_segment(k, gone, 0);           /* cp to a dead pid's name */
    copy_segment(k, gone1, 1);          /* a header that says pid 1 */
    copy_segment(k, me, 0);             /* named for a running process */
    const char *argp[] = { gpumem(), "ps", "--json", "--all", NULL };
    ck_assert_int_eq(tool(argp), 0);
    ck_assert_msg(count(out, "{\"pid\":") == 1, "%.1500s", out);
    obj_of(out, k);
    const char *argl[] = { gpumem(), "log", "--format", "jsonl", NULL };
    ck_assert_int_eq(tool(argl), 0);
    ck_assert_msg(count(out, "\"kind\":\"process\"") == 1, "%.2000s", out);
    char spid[16], pat[256];
    snprintf(spid, sizeof spid, "%d", gone);
    const char *argr[] = { gpumem(), "report", spid, NULL };
    ck_assert_int_eq(tool(argr), 1);
    snprintf(pat, sizeof pat, "the header's pid %d is not the name's pid %d",
             k, gone);
    ck_assert_msg(strstr(out, pat) != NULL, "%s", out);
    /* gc: the copies named for dead pids go, the one named for a running
     * process stays. */
    const char *argg[] = { gpumem(), "gc", NULL };
    ck_assert_int_eq(tool(argg), 0);
    ck_assert(!exists(k) && !exists(gone) && !exists(gone1));
    ck_assert(exists(me));
    snprintf(pat, sizeof pat, "removed %s/%s.%d (pid %d, unreadable)",
             GM_READER_DEFAULT_DIR, prefix, gone1, gone1);
    ck_assert_msg(strstr(out, pat) != NULL, "%s", out);
    cleanup();
}
END_TEST

/* ---- groups ---------------------------------------------------------------------- */

#define GLIMIT (1ull << 30)
static const unsigned char GUUID[16] = { 0x5e, 0x1f, 0x00, 0x7a, 1, 2, 3, 4,
                                         5, 6, 7, 8, 9, 10, 11, 12 };

/* A forked child that joins group `name` of the test's prefix with this
 * weight and a 1 GiB group limit, charges `charge` bytes on one device,
 * then waits to be killed (it dies with the test, too). */
static pid_t join_member(const char *name, double weight, uint64_t charge)
{
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(fd[0]);
        static struct gm_group g;
        struct gm_group_params p = {
            .prefix = prefix, .name = name, .weight = weight,
            .limit = { .kind = GM_LIMIT_BYTES, .bytes = GLIMIT },
        };
        char msg[512];
        char ok = gm_group_join(&g, &p, msg, sizeof msg) == 0;
        int gdev = ok ? gm_group_device(&g, GUUID, 80ull << 30, msg,
                                        sizeof msg) : -1;
        ok = gdev >= 0 && gm_group_reserve(&g, gdev, charge, NULL);
        if (write(fd[1], &ok, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(fd[1]);
    char ok = 0;
    ck_assert_int_eq(read(fd[0], &ok, 1), 1);
    close(fd[0]);
    ck_assert_msg(ok, "group member %d could not join and charge", (int)pid);
    return pid;
}

static const char *group_path(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s.group@%s", GM_READER_DEFAULT_DIR,
             prefix, name);
    return path;
}

static bool group_exists(const char *name)
{
    struct stat st;
    return lstat(group_path(name), &st) == 0;
}

/* The JSON object of member pid in a ps/top document. */
static const char *member_of(const char *doc, int pid)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"pid\":%d,\"state\":", pid);
    const char *p = strstr(doc, pat);
    ck_assert_msg(p != NULL, "member %d not in %.600s", pid, doc);
    return p;
}

/* The group's view as the library reads it. */
static struct gm_group_view *view_of(const char *name)
{
    static struct gm_group_view v;
    char err[512];
    ck_assert_msg(gm_group_snapshot(group_path(name), &v, err, sizeof err)
                  == 0, "%s", err);
    return &v;
}

static const struct gm_group_view_member *vmember(
    const struct gm_group_view *v, int pid)
{
    for (unsigned i = 0; i < v->nmembers; i++)
        if (v->member[i].pid == pid)
            return &v->member[i];
    ck_abort_msg("pid %d is not a member", pid);
    return NULL;
}

START_TEST(ps_and_top_show_groups)
{
    new_prefix("grp");
    const uint64_t ca = 256ull << 20, cb = 64ull << 20;
    pid_t a = join_member("tg", 1.5, ca);
    pid_t b = join_member("tg", 0.5, cb);
    const struct gm_group_view *v = view_of("tg");
    /* shares: floor(L * w / W), weights 1.5 and 0.5 */
    const uint64_t sa = GLIMIT * 1500 / 2000, sb = GLIMIT * 500 / 2000;
    ck_assert_uint_eq(vmember(v, a)->share[0], sa);
    ck_assert_uint_eq(vmember(v, b)->share[0], sb);

    const char *argv[] = { gpumem(), "ps", "--json", NULL };
    ck_assert_int_eq(tool(argv), 0);
    ck_assert(strncmp(out, "{\"processes\":[],\"groups\":[", 26) == 0);
    const char *g = strstr(out, "{\"group\":\"tg\",");
    ck_assert_msg(g != NULL, "%s", out);
    ck_assert_uint_eq(num_after(g, "live_members"), 2);
    ck_assert_uint_eq(num_after(g, "dead_members"), 0);
    ck_assert_uint_eq(num_after(g, "used"), ca + cb);
    ck_assert_uint_eq(num_after(g, "limit"), GLIMIT);
    ck_assert_uint_eq(num_after(g, "peak"), v->dev[0].peak);
    const char *ma = member_of(g, a), *mb = member_of(g, b);
    ck_assert_ptr_nonnull(strstr(ma, "\"state\":\"live\",\"weight\":1.5,"));
    ck_assert_ptr_nonnull(strstr(mb, "\"state\":\"live\",\"weight\":0.5,"));
    ck_assert_uint_eq(num_after(ma, "used"), ca);
    ck_assert_uint_eq(num_after(ma, "share"), sa);
    ck_assert_uint_eq(num_after(mb, "used"), cb);
    ck_assert_uint_eq(num_after(mb, "share"), sb);

    /* text: the group line, then one line per member */
    const char *argt[] = { gpumem(), "ps", NULL };
    ck_assert_int_eq(tool(argt), 0);
    ck_assert_ptr_nonnull(strstr(out, "\nGROUP "));
    const char *gl = strstr(out, "\ntg ");
    ck_assert_msg(gl != NULL, "%s", out);
    ck_assert_ptr_nonnull(strstr(gl, "GPU-5e1f007a"));
    ck_assert_ptr_nonnull(strstr(gl, "  320.0M "));
    ck_assert_ptr_nonnull(strstr(gl, "  31%  2\n"));
    char pat[128];
    snprintf(pat, sizeof pat, "%7d    1.50 GPU-5e1f007a   768.0M   256.0M "
             "live ", (int)a);
    ck_assert_msg(strstr(gl, pat) != NULL, "no '%s' in %s", pat, out);
    snprintf(pat, sizeof pat, "%7d    0.50 GPU-5e1f007a   256.0M    64.0M "
             "live ", (int)b);
    ck_assert_msg(strstr(gl, pat) != NULL, "no '%s' in %s", pat, out);

    /* gpumem-top: --once prints the same section, --json has the groups */
    const char *argo[] = { gm_bpath("gpumem-top"), "--once", "--prefix",
                           prefix, NULL };
    ck_assert_int_eq(gm_run(NULL, 0, argo, out, OUT_CAP), 0);
    gl = strstr(out, "\ntg ");
    ck_assert_msg(gl != NULL, "%s", out);
    ck_assert_ptr_nonnull(strstr(gl, "  320.0M "));
    snprintf(pat, sizeof pat, "%7d    1.50 ", (int)a);
    ck_assert_ptr_nonnull(strstr(gl, pat));
    const char *argj[] = { gm_bpath("gpumem-top"), "--json", "-n", "1",
                           NULL };
    ck_assert_int_eq(tool(argj), 0);
    g = strstr(out, ",\"groups\":[{\"group\":\"tg\",");
    ck_assert_msg(g != NULL, "%s", out);
    ck_assert_uint_eq(num_after(member_of(g, b), "share"), sb);

    /* a member killed: shown dead, not yet reclaimed (no reaper runs) */
    stop(a);
    ck_assert_int_eq(tool(argv), 0);
    g = strstr(out, "{\"group\":\"tg\",");
    ck_assert_ptr_nonnull(g);
    ck_assert_uint_eq(num_after(g, "live_members"), 1);
    ck_assert_uint_eq(num_after(g, "dead_members"), 1);
    ck_assert_ptr_nonnull(strstr(member_of(g, a), "\"state\":\"dead\""));
    ck_assert_ptr_nonnull(strstr(member_of(g, b), "\"state\":\"live\""));
    ck_assert_int_eq(tool(argt), 0);
    ck_assert_ptr_nonnull(strstr(out, "  1 (+1 dead)\n"));
    stop(b);
    cleanup();
}
END_TEST

START_TEST(gc_removes_group_without_live_member)
{
    new_prefix("ggc");
    pid_t a = join_member("tg", 1.0, 16ull << 20);
    pid_t b = join_member("tg", 1.0, 32ull << 20);
    const char *argd[] = { gpumem(), "gc", "--dry-run", NULL };
    const char *argv[] = { gpumem(), "gc", NULL };
    /* live members: never removed, never listed */
    ck_assert_int_eq(tool(argd), 0);
    ck_assert_ptr_null(strstr(out, ".group@tg"));
    ck_assert_int_eq(tool(argv), 0);
    ck_assert_ptr_null(strstr(out, ".group@tg"));
    ck_assert(group_exists("tg"));
    /* one member killed, one alive: still left alone */
    stop(a);
    ck_assert_int_eq(tool(argd), 0);
    ck_assert_ptr_null(strstr(out, ".group@tg"));
    ck_assert_int_eq(tool(argv), 0);
    ck_assert_ptr_null(strstr(out, ".group@tg"));
    ck_assert(group_exists("tg"));
    ck_assert_uint_eq(view_of("tg")->nmembers, 2);
    /* no live member: --dry-run lists it and keeps it, gc removes it */
    stop(b);
    ck_assert_int_eq(tool(argd), 0);
    char pat[512];
    snprintf(pat, sizeof pat, "would remove %s (group tg, no live member, "
             "2 dead)\n", group_path("tg"));
    ck_assert_msg(strstr(out, pat) != NULL, "no '%s' in %s", pat, out);
    ck_assert(group_exists("tg"));
    ck_assert_int_eq(tool(argv), 0);
    snprintf(pat, sizeof pat, "removed %s (group tg, ", group_path("tg"));
    ck_assert_msg(strstr(out, pat) != NULL, "no '%s' in %s", pat, out);
    ck_assert(!group_exists("tg"));
    cleanup();
}
END_TEST

START_TEST(other_users_group_left_alone)
{
    new_prefix("gou");
    pid_t a = join_member("tu", 1.0, 16ull << 20);
    stop(a);
    if (chown(group_path("tu"), 65534, 65534) != 0) {
        /* Not allowed to give a file away (not root): nothing to test. */
        cleanup();
        return;
    }
    const char *argp[] = { gpumem(), "ps", "--json", NULL };
    ck_assert_int_eq(tool(argp), 0);
    ck_assert_ptr_null(strstr(out, "\"group\":\"tu\""));
    const char *arga[] = { gpumem(), "ps", "--json", "--all", NULL };
    ck_assert_int_eq(tool(arga), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"group\":\"tu\""));
    const char *argv[] = { gpumem(), "gc", NULL };
    ck_assert_int_eq(tool(argv), 0);
    ck_assert_ptr_null(strstr(out, ".group@tu"));
    ck_assert(group_exists("tu"));
    cleanup();
}
END_TEST

START_TEST(hostile_group_file_left_alone)
{
    new_prefix("ghf");
    /* ours, 0600, but 100 bytes of junk: not a group segment */
    int fd = open(group_path("junk"), O_CREAT | O_EXCL | O_WRONLY, 0600);
    ck_assert_int_ge(fd, 0);
    char junk[100];
    memset(junk, 'x', sizeof junk);
    ck_assert_int_eq(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    close(fd);
    const char *argp[] = { gpumem(), "ps", "--json", NULL };
    ck_assert_int_eq(tool(argp), 0);
    ck_assert(strncmp(out, "{\"processes\":[],\"groups\":[]}\n", 29) == 0);
    const char *argv[] = { gpumem(), "gc", NULL };
    ck_assert_int_eq(tool(argv), 0);
    ck_assert_ptr_nonnull(strstr(out, "gpumem: gc: "));
    ck_assert_ptr_nonnull(strstr(out, "left alone"));
    ck_assert_ptr_null(strstr(out, "removed"));
    ck_assert(group_exists("junk"));
    cleanup();
}
END_TEST

START_TEST(ps_group_member_command)
{
    new_prefix("gcm");
    pid_t pid = live_trainsim_in("tsg");
    ck_assert(group_exists("tsg"));
    const char *argv[] = { gpumem(), "ps", "--json", NULL };
    ck_assert_int_eq(tool(argv), 0);
    const char *g = strstr(out, "{\"group\":\"tsg\",");
    ck_assert_msg(g != NULL, "%s", out);
    const char *m = member_of(g, pid);
    ck_assert_ptr_nonnull(strstr(m, "\"state\":\"live\",\"weight\":0.7,"));
    const char *c = strstr(m, "\"command\":\"");
    ck_assert_ptr_nonnull(c);
    ck_assert(strncmp(c + 11, trainsim(), strlen(trainsim())) == 0);
    ck_assert_uint_eq(num_after(m, "share"), 6ull << 30);
    ck_assert_uint_gt(num_after(m, "used"), 0);
    const char *argt[] = { gpumem(), "ps", NULL };
    ck_assert_int_eq(tool(argt), 0);
    char pat[64];
    snprintf(pat, sizeof pat, "%7d    0.70 ", (int)pid);
    const char *line = strstr(out, pat);
    ck_assert_msg(line != NULL, "%s", out);
    ck_assert_ptr_nonnull(strstr(line, " live   "));
    ck_assert_ptr_nonnull(strstr(line, "gpumem-trainsim --steps 100000"));
    /* killed: its segment and the group stay; still named, now dead */
    stop(pid);
    ck_assert_int_eq(tool(argt), 0);
    line = strstr(out, pat);
    ck_assert_msg(line != NULL, "%s", out);
    ck_assert_ptr_nonnull(strstr(line, " dead   "));
    ck_assert_ptr_nonnull(strstr(line, "gpumem-trainsim --steps 100000"));
    ck_assert_ptr_nonnull(strstr(out, "  0 (+1 dead)\n"));
    cleanup();
}
END_TEST

/* ---- figures past any sensible share ---------------------------------------------- */

/* Writes v at byte off of the file at path. */
static void poke_u64(const char *path, size_t off, uint64_t v)
{
    int fd = open(path, O_WRONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, &v, sizeof v, (off_t)off), (ssize_t)sizeof v);
    close(fd);
}

/* Used of limit where used × 100 wraps in 64 bits: shown capped at 999%,
 * in the column's width, by gpumem ps and gpumem-top --once, for a
 * process (used 2^63, limit 1) and a group (used 2^64-1, limit 1). */
START_TEST(percent_past_the_limit_is_capped)
{
    new_prefix("pct");
    int k = kept_trainsim("2G", "2", NULL, NULL, NULL);
    int gone = gone_pid();
    copy_segment(k, gone, (uint32_t)gone);
    char path[256];
    snprintf(path, sizeof path, "%s/%s.%d", GM_READER_DEFAULT_DIR, prefix,
             gone);
    size_t dev0 = sizeof(struct gm_abi_header);
    poke_u64(path, dev0 + offsetof(struct gm_abi_dev, used), 1ull << 63);
    poke_u64(path, dev0 + offsetof(struct gm_abi_dev, peak), 1ull << 63);
    poke_u64(path, dev0 + offsetof(struct gm_abi_dev, limit), 1);
    pid_t m = join_member("tp", 1.0, 1 << 20);
    size_t gdev0 = offsetof(struct gm_group_seg, dev);
    poke_u64(group_path("tp"), gdev0 + offsetof(struct gm_group_dev, used),
             UINT64_MAX);
    poke_u64(group_path("tp"), gdev0 + offsetof(struct gm_group_dev, peak),
             UINT64_MAX);
    poke_u64(group_path("tp"), gdev0 + offsetof(struct gm_group_dev, limit),
             1);
    char row[64];
    snprintf(row, sizeof row, "%7d ", gone);
    const char *ps[] = { gpumem(), "ps", NULL };
    const char *top[] = { gm_bpath("gpumem-top"), "--once", "--prefix",
                          prefix, NULL };
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(i == 0 ? tool(ps) : gm_run(NULL, 0, top, out,
                                                    OUT_CAP), 0);
        const char *r = strstr(out, row), *g = strstr(out, "\ntp ");
        ck_assert_msg(r != NULL && g != NULL, "%s", out);
        const char *nl = strchr(r, '\n'), *p = strstr(r, "999%");
        ck_assert_msg(p != NULL && p < nl, "%.*s", (int)(nl - r), r);
        ck_assert_msg(strstr(g, "   1B 999%  1\n") != NULL, "%s", g);
    }
    stop(m);
    cleanup();
}
END_TEST

/* ---- help and options ------------------------------------------------------------ */

START_TEST(help_and_bad_options)
{
    new_prefix("opt");
    static const char *const cmds[] = { "run", "ps", "log", "report", "gc" };
    for (size_t i = 0; i < 5; i++) {
        const char *argv[] = { gpumem(), cmds[i], "--help", NULL };
        ck_assert_int_eq(tool(argv), 0);
        ck_assert_ptr_nonnull(strstr(out, "NAME"));
        ck_assert_ptr_nonnull(strstr(out, "SYNOPSIS"));
        ck_assert_ptr_nonnull(strstr(out, "EXIT STATUS"));
        ck_assert_ptr_nonnull(strstr(out, "EXAMPLES"));
        const char *argb[] = { gpumem(), cmds[i], "--bogus-option", "--",
                               "true", NULL };
        ck_assert_int_eq(tool(argb), 2);
        ck_assert_ptr_nonnull(strstr(out, "gpumem: "));
    }
    const char *argt[] = { gm_bpath("gpumem-top"), "--help", NULL };
    ck_assert_int_eq(tool(argt), 0);
    ck_assert_ptr_nonnull(strstr(out, "SYNOPSIS"));
    const char *argb[] = { gm_bpath("gpumem-top"), "-d", "zero", NULL };
    ck_assert_int_eq(tool(argb), 2);
    const char *argp[] = { gpumem(), "ps", "--prefix", "bad/prefix", NULL };
    ck_assert_int_eq(tool(argp), 2);
    const char *argf[] = { gpumem(), "log", "--format", "xml", NULL };
    ck_assert_int_eq(tool(argf), 2);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tools");
    TCase *t = tcase_create("tools");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, ps_json_matches_kept_segment);
    tcase_add_test(t, ps_and_top_show_live_process);
    tcase_add_test(t, log_jsonl_has_every_allocation);
    tcase_add_test(t, log_follow_waits_for_process);
    tcase_add_test(t, report_json_and_trace_agree);
    tcase_add_test(t, report_json_writes_no_limit_as_null);
    tcase_add_test(t, report_context_freed_from_segment_and_trace);
    tcase_add_test(t, report_svg_is_well_formed);
    tcase_add_test(t, run_passes_policy_and_status);
    tcase_add_test(t, run_refuses_bad_policy_and_usage);
    tcase_add_test(t, run_preloads_the_shim);
    tcase_add_test(t, gc_removes_dead_keeps_live);
    tcase_add_test(t, copied_segment_is_not_its_names);
    tcase_add_test(t, percent_past_the_limit_is_capped);
    tcase_add_test(t, ps_and_top_show_groups);
    tcase_add_test(t, gc_removes_group_without_live_member);
    tcase_add_test(t, other_users_group_left_alone);
    tcase_add_test(t, hostile_group_file_left_alone);
    tcase_add_test(t, ps_group_member_command);
    tcase_add_test(t, help_and_bad_options);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
