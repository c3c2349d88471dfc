/*
 * tests/integ/test_trainsim.c — gpumem-trainsim run as a program over the
 * simulated driver (LD_LIBRARY_PATH=$BUILD/sim, no shim preloaded).
 *
 * Each case fork/execs $BUILD/gpumem-trainsim (BUILD from the environment,
 * default "build") with a clean SIMCUDA_* environment, captures stdout and
 * stderr, and checks the exit status and what the program printed: the
 * allocation counts its documented pattern implies, the peak its
 * --print-peak plan predicts, OOM reports, leaks, bad options, threads.
 */
#include <check.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "policy/parse.h"

#define MAX_ARGS 40

struct result {
    int status; /* exit code, or 128 + signal */
    char *out;  /* all of stdout, NUL-terminated (malloc) */
    char *err;  /* all of stderr */
};

static const char *build_dir(void)
{
    const char *b = getenv("BUILD");
    return b && *b ? b : "build";
}

static char *slurp(FILE *f)
{
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    ck_assert_int_ge(len, 0);
    rewind(f);
    char *buf = malloc((size_t)len + 1);
    ck_assert_ptr_nonnull(buf);
    size_t n = fread(buf, 1, (size_t)len, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void child_env(const char *const *env)
{
    static const char *const clear[] = { "LD_PRELOAD", "SIMCUDA_DEVICES", "SIMCUDA_MEMORY",
                                         "SIMCUDA_CONTEXT", "SIMCUDA_LATENCY", "SIMCUDA_FAIL" };
    for (size_t i = 0; i < sizeof clear / sizeof clear[0]; i++)
        unsetenv(clear[i]);
    char lib[4096];
    snprintf(lib, sizeof lib, "%s/sim", build_dir());
    setenv("LD_LIBRARY_PATH", lib, 1);
    for (; env && *env; env++)
        putenv((char *)*env);
}

/* Runs trainsim with args (NULL-terminated) and NAME=VALUE overrides. */
static void run_env(const char *const *env, const char *const *args, struct result *r)
{
    char prog[4096];
    snprintf(prog, sizeof prog, "%s/gpumem-trainsim", build_dir());
    const char *argv[MAX_ARGS + 2] = { prog };
    for (int i = 0; args[i]; i++) {
        ck_assert_int_lt(i, MAX_ARGS);
        argv[i + 1] = args[i];
    }
    FILE *out = tmpfile(), *err = tmpfile();
    ck_assert(out && err);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fileno(out), 1);
        dup2(fileno(err), 2);
        child_env(env);
        execv(prog, (char *const *)argv);
        _exit(127);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    free(r->out);
    free(r->err);
    r->out = slurp(out);
    r->err = slurp(err);
}

static void run(const char *const *args, struct result *r)
{
    run_env(NULL, args, r);
}

struct done {
    uint64_t steps, allocs, frees, peak;
};

/* Parses "trainsim: done: S steps, A allocs, F frees, peak X (N bytes), ...". */
static void parse_done(const struct result *r, struct done *d)
{
    const char *p = strstr(r->out, "trainsim: done: ");
    ck_assert_msg(p, "no final line; stdout:\n%.1500s\nstderr:\n%.1500s", r->out, r->err);
    const char *b = strstr(p, " (");
    ck_assert(b);
    ck_assert_int_eq(sscanf(p, "trainsim: done: %" SCNu64 " steps, %" SCNu64 " allocs, %" SCNu64
                            " frees,", &d->steps, &d->allocs, &d->frees), 3);
    ck_assert_int_eq(sscanf(b, " (%" SCNu64 " bytes)", &d->peak), 1);
}

static struct result *res(void)
{
    static struct result r;
    free(r.out);
    free(r.err);
    memset(&r, 0, sizeof r);
    return &r;
}

static void assert_exit(const struct result *r, int want)
{
    ck_assert_msg(r->status == want, "exit %d, want %d; stderr:\n%.1500s", r->status, want,
                  r->err);
}

static void assert_ok(const struct result *r)
{
    assert_exit(r, 0);
}

/* "in use 8.0 MiB" -> bytes, for the n-th progress line (0-based). */
static uint64_t in_use_at(const struct result *r, int n)
{
    const char *p = r->out;
    for (int i = 0; i <= n; i++) {
        p = strstr(p, "  in use ");
        ck_assert_msg(p, "progress line %d missing:\n%.1500s", n, r->out);
        p += strlen("  in use ");
    }
    char num[32] = "", unit[8] = "", joined[48];
    ck_assert_int_eq(sscanf(p, "%31s %7s", num, unit), 2);
    snprintf(joined, sizeof joined, "%s%s", num, unit);
    uint64_t v;
    ck_assert_msg(gm_parse_size(joined, &v) == 0, "bad size '%s'", joined);
    return v;
}

static uint64_t planned_peak(const char *const *args)
{
    const char *argv[MAX_ARGS + 2];
    int n = 0;
    for (; args[n]; n++)
        argv[n] = args[n];
    argv[n++] = "--print-peak";
    argv[n] = NULL;
    static struct result plan; /* not res(): callers still hold theirs */
    struct result *r = &plan;
    run(argv, r);
    assert_ok(r);
    uint64_t v;
    ck_assert_int_eq(sscanf(r->out, "%" SCNu64, &v), 1);
    return v;
}

static int count_lines(const char *s, const char *needle)
{
    int n = 0;
    for (; (s = strstr(s, needle)); s++)
        n++;
    return n;
}

/* ---- every lookup path with every allocation API ------------------------ */

static const char *const vias[] = { "direct", "dlsym", "gpa" };
static const char *const apis[] = { "alloc", "async", "vmm", "mixed" };

START_TEST(test_via_api)
{
    const char *args[] = { "--via", vias[_i / 4], "--api", apis[_i % 4], "--steps", "12",
                           "--layers", "4", "--hidden", "512", "--batch", "4", "--seq", "16",
                           "--eval-every", "5", "--report-every", "4", NULL };
    struct result *r = res();
    run(args, r);
    assert_ok(r);
    struct done d;
    parse_done(r, &d);
    /* 3 per layer once, 2 per layer per step (activation, gradient), 2 evals */
    ck_assert_uint_eq(d.steps, 12);
    ck_assert_uint_eq(d.allocs, 3 * 4 + 12 * 2 * 4 + 2);
    ck_assert_uint_eq(d.frees, d.allocs);
    ck_assert_int_eq(count_lines(r->out, "trainsim: step "), 3);
    ck_assert_ptr_nonnull(strstr(r->out, "trainsim: step 12/12  in use "));
    if (_i % 4 < 2) /* alloc, async: exact sizes */
        ck_assert_uint_eq(d.peak, planned_peak(args));
    else            /* vmm rounds up to the driver's granularity */
        ck_assert_uint_ge(d.peak, 3 * 4 * 512 * 512 * 4);
    ck_assert_str_eq(r->err, "");
}
END_TEST

/* The lookup path is visible in the dynamic linker's binding trace: direct
 * binds cuMemAlloc_v2 from the program's scope, dlsym within libcuda's own
 * handle, gpa never looks it up (only cuGetProcAddress_v2). */
static const char *binding_of(const char *err, const char *sym)
{
    char needle[64];
    snprintf(needle, sizeof needle, "symbol `%s'", sym);
    const char *hit = strstr(err, needle);
    if (!hit)
        return NULL;
    while (hit > err && hit[-1] != '\n')
        hit--;
    return hit;
}

START_TEST(test_lookup_path)
{
    const char *env[] = { "LD_DEBUG=bindings", NULL };
    const char *args[] = { "--via", vias[_i], "--steps", "1", "--quiet", NULL };
    struct result *r = res();
    run_env(env, args, r);
    assert_ok(r);
    ck_assert_msg(strstr(r->err, "binding file "), "no binding trace:\n%.1500s", r->err);
    const char *line = binding_of(r->err, "cuMemAlloc_v2");
    const char *gpa = binding_of(r->err, "cuGetProcAddress_v2");
    if (_i == 0) {
        ck_assert_ptr_nonnull(line);
        const char *to = strstr(line, " to ");
        const char *prog = strstr(line, "gpumem-trainsim [");
        ck_assert_msg(prog && to && prog < to, "%.200s", line);
    } else if (_i == 1) {
        ck_assert_ptr_nonnull(line);
        const char *to = strstr(line, " to ");
        const char *own = strstr(line, "libcuda.so.1 [");
        ck_assert_msg(own && to && own < to, "%.200s", line);
    } else {
        ck_assert_ptr_null(line);
        ck_assert_ptr_nonnull(gpa);
    }
    if (_i != 2)
        ck_assert_ptr_null(gpa);
}
END_TEST

/* ---- the measured peak is the documented formula ------------------------- */

static const char *const *plan_case(int i)
{
    static const char *const cases[][16] = {
        /* no eval: 3LW + L*A + W */
        { "--eval-every", "0", "--steps", "5", "--layers", "6", NULL },
        /* gradients dominate the backward peak: A + L*W */
        { "--eval-every", "0", "--steps", "3", "--hidden", "2048", "--batch", "1",
          "--seq", "8", NULL },
        /* eval buffer 2*L*A dominates */
        { "--eval-every", "2", "--steps", "5", "--layers", "3", NULL },
        /* leaks accumulate up to the last step */
        { "--eval-every", "4", "--steps", "10", "--leak", "3M", "--layers", "2", NULL },
    };
    return cases[i];
}

START_TEST(test_peak_is_planned)
{
    const char *const *args = plan_case(_i);
    struct result *r = res();
    run(args, r);
    assert_ok(r);
    struct done d;
    parse_done(r, &d);
    ck_assert_uint_eq(d.peak, planned_peak(args));
}
END_TEST

START_TEST(test_plan_formula)
{
    /* defaults: W = 4 MiB, A = 32*64*1024*4 = 8 MiB, L = 12, eval 2*L*A */
    const char *none[] = { NULL };
    ck_assert_uint_eq(planned_peak(none), 3 * 12 * (4ull << 20) + 2 * 12 * (8ull << 20));
    const char *noeval[] = { "--eval-every", "0", NULL };
    ck_assert_uint_eq(planned_peak(noeval),
                      3 * 12 * (4ull << 20) + 12 * (8ull << 20) + (4ull << 20));
}
END_TEST

/* ---- out of memory -------------------------------------------------------- */

START_TEST(test_oom_in_setup)
{
    const char *env[] = { "SIMCUDA_MEMORY=64M", "SIMCUDA_CONTEXT=0", NULL };
    const char *args[] = { "--quiet", NULL };
    struct result *r = res();
    run_env(env, args, r);
    assert_exit(r, 3);
    ck_assert_msg(strstr(r->err, "trainsim: step 0: cuMemAlloc_v2 of 4.0 MiB failed: "
                                 "CUDA_ERROR_OUT_OF_MEMORY (2)\n"), "stderr:\n%.1500s", r->err);
    ck_assert_ptr_null(strstr(r->out, "trainsim: done"));
}
END_TEST

/* 3*4 weights of 4 MiB = 48 MiB fit in 64M; the third 8 MiB activation of
 * step 1 does not. */
START_TEST(test_oom_in_step)
{
    static const char *const fn[] = { "cuMemAlloc_v2", "cuMemAllocAsync", "cuMemCreate",
                                      "cuMemAlloc_v2" };
    const char *env[] = { "SIMCUDA_MEMORY=64M", "SIMCUDA_CONTEXT=0", NULL };
    const char *args[] = { "--api", apis[_i], "--layers", "4", NULL };
    struct result *r = res();
    run_env(env, args, r);
    assert_exit(r, 3);
    char want[160];
    snprintf(want, sizeof want,
             "trainsim: step 1: %s of 8.0 MiB failed: CUDA_ERROR_OUT_OF_MEMORY (2)\n", fn[_i]);
    ck_assert_msg(strstr(r->err, want), "want '%s'; stderr:\n%.1500s", want, r->err);
    ck_assert_int_eq(count_lines(r->err, "failed"), 1);
}
END_TEST

/* The primary context itself does not fit: exit 3, not a setup failure. */
START_TEST(test_oom_context)
{
    const char *env[] = { "SIMCUDA_MEMORY=64M", "SIMCUDA_CONTEXT=300M", NULL };
    const char *args[] = { NULL };
    struct result *r = res();
    run_env(env, args, r);
    assert_exit(r, 3);
    ck_assert_msg(strstr(r->err, "trainsim: cuDevicePrimaryCtxRetain failed: "
                                 "CUDA_ERROR_OUT_OF_MEMORY (2)\n"), "stderr:\n%.1500s", r->err);
}
END_TEST

/* Any failed allocation exits 3 and names the driver's error: the 40th
 * allocation call is step 1's fourth activation (36 made in setup). */
START_TEST(test_injected_failure)
{
    const char *env[] = { "SIMCUDA_FAIL=40:CUDA_ERROR_INVALID_VALUE", NULL };
    const char *args[] = { "--quiet", NULL };
    struct result *r = res();
    run_env(env, args, r);
    assert_exit(r, 3);
    ck_assert_msg(strstr(r->err, "trainsim: step 1: cuMemAlloc_v2 of 8.0 MiB failed: "
                                 "CUDA_ERROR_INVALID_VALUE (1)\n"), "stderr:\n%.1500s", r->err);
}
END_TEST

/* ---- leaks ------------------------------------------------------------- */

START_TEST(test_leak_grows)
{
    const char *args[] = { "--leak", "8M", "--steps", "20", "--report-every", "10",
                           "--eval-every", "0", NULL };
    struct result *r = res();
    run(args, r);
    assert_ok(r);
    ck_assert_uint_eq(in_use_at(r, 1) - in_use_at(r, 0), 10 * (8ull << 20));
    struct done d;
    parse_done(r, &d);
    ck_assert_uint_eq(d.allocs - d.frees, 20);
    ck_assert_ptr_nonnull(strstr(r->out, "leaked 160.0 MiB\n"));
}
END_TEST

START_TEST(test_no_leak_steady)
{
    const char *args[] = { "--steps", "20", "--report-every", "10", NULL };
    struct result *r = res();
    run(args, r);
    assert_ok(r);
    ck_assert_uint_eq(in_use_at(r, 0), 3 * 12 * (4ull << 20));
    ck_assert_uint_eq(in_use_at(r, 1), in_use_at(r, 0));
    ck_assert_ptr_nonnull(strstr(r->out, "leaked 0 B\n"));
}
END_TEST

/* ---- options -------------------------------------------------------------- */

static const char *const bad[][8] = {
    { "--steps", "abc", NULL }, { "--steps", "0", NULL }, { "--via", "ptr", NULL },
    { "--api", "malloc", NULL }, { "--leak", "4 gigs", NULL }, { "--threads", "0", NULL },
    { "--layers", "2", "--threads", "3", NULL }, { "--bogus", NULL }, { "extra", NULL },
    { "--hidden", "-1", NULL }, { "--steps", NULL }, { "--steps", "5x", NULL },
    { "--batch", "1048576", "--seq", "1048576", "--hidden", "1048576", NULL },
};

START_TEST(test_bad_options)
{
    struct result *r = res();
    run(bad[_i], r);
    ck_assert_msg(r->status == 2, "%s: exit %d", bad[_i][0], r->status);
    ck_assert_ptr_nonnull(strstr(r->err, "usage: gpumem-trainsim"));
    ck_assert_str_eq(r->out, "");
}
END_TEST

START_TEST(test_help)
{
    const char *args[] = { "--help", NULL };
    struct result *r = res();
    run(args, r);
    assert_ok(r);
    ck_assert_ptr_nonnull(strstr(r->out, "SYNOPSIS"));
    ck_assert_ptr_nonnull(strstr(r->out, "EXIT STATUS"));
}
END_TEST

/* ---- threads ----------------------------------------------------------- */

START_TEST(test_threads)
{
    const char *args[] = { "--threads", "4", "--layers", "10", "--steps", "20", "--api",
                           apis[_i], "--eval-every", "10", "--hidden", "256", NULL };
    struct result *r = res();
    run(args, r);
    assert_ok(r);
    struct done d;
    parse_done(r, &d);
    /* each thread: its layers' params once, 2 per layer per step, 2 evals */
    ck_assert_uint_eq(d.allocs, 3 * 10 + 20 * 2 * 10 + 4 * 2);
    ck_assert_uint_eq(d.frees, d.allocs);
    if (_i < 2)
        ck_assert_uint_le(d.peak, planned_peak(args));
}
END_TEST

/* ---- driver setup ------------------------------------------------------- */

START_TEST(test_device_choice)
{
    const char *env[] = { "SIMCUDA_DEVICES=2", NULL };
    const char *one[] = { "--device", "1", "--steps", "2", NULL };
    struct result *r = res();
    run_env(env, one, r);
    assert_ok(r);
    const char *three[] = { "--device", "3", NULL };
    run_env(env, three, r);
    assert_exit(r, 1);
    ck_assert_msg(strstr(r->err, "trainsim: cuDeviceGet(3) failed: CUDA_ERROR_INVALID_DEVICE"),
                  "stderr:\n%.1500s", r->err);
}
END_TEST

START_TEST(test_no_driver)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) { /* a system driver is installed: it would be found */
        dlclose(h);
        return;
    }
    const char *env[] = { "LD_LIBRARY_PATH=/nonexistent", NULL };
    const char *args[] = { NULL };
    struct result *r = res();
    run_env(env, args, r);
    assert_exit(r, 1);
    ck_assert_ptr_nonnull(strstr(r->err, "trainsim: cannot load libcuda.so.1"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("trainsim");
    TCase *tc = tcase_create("trainsim");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_via_api, 0, 12);
    tcase_add_loop_test(tc, test_peak_is_planned, 0, 4);
    tcase_add_test(tc, test_plan_formula);
    tcase_add_loop_test(tc, test_lookup_path, 0, 3);
    tcase_add_test(tc, test_oom_in_setup);
    tcase_add_test(tc, test_oom_context);
    tcase_add_test(tc, test_injected_failure);
    tcase_add_loop_test(tc, test_oom_in_step, 0, 4);
    tcase_add_test(tc, test_leak_grows);
    tcase_add_test(tc, test_no_leak_steady);
    tcase_add_loop_test(tc, test_bad_options, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, test_help);
    tcase_add_loop_test(tc, test_threads, 0, 4);
    tcase_add_test(tc, test_device_choice);
    tcase_add_test(tc, test_no_driver);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
