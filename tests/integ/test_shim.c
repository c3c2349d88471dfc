/*
 * tests/integ/test_shim.c — the preloaded shim over the simulated driver,
 * reached through all three lookup paths: limits, every wrapped API,
 * virtualised device size, context memory, threads, fork, bad
 * configuration, lookups (cuGetProcAddress variants, dlsym RTLD_NEXT).
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gm_spawn.h"
#include "tools/lib/reader.h"

static char out[1 << 16];

static const char *apicheck(const char *via)
{
    return strcmp(via, "link") == 0 ? gm_bpath("tests/progs/direct_apicheck")
                                    : gm_bpath("tests/progs/apicheck");
}

static const char *const vias[] = { "link", "dlsym", "gpa" };

#define RUN_OK(env, ...)                                                  \
    do {                                                                  \
        const char *argv_[] = { __VA_ARGS__, NULL };                      \
        int rc_ = gm_run(env, 1, argv_, out, sizeof out);                 \
        ck_assert_msg(rc_ == 0, "exit %d:\n%s", rc_, out);                \
    } while (0)

START_TEST(edge_exact)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "SIMCUDA_CONTEXT=300M", NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "edge", "1073741824");
    ck_assert_ptr_nonnull(strstr(out, "ok edge"));
    /* Exactly limit - context fits. */
    char want[64];
    snprintf(want, sizeof want, "%llu bytes fit",
             (unsigned long long)((1ull << 30) - 300ull * (1 << 20)));
    ck_assert_msg(strstr(out, want) != NULL, "%s", out);
}
END_TEST

START_TEST(every_api_charged)
{
    const char *env[] = { "GPUMEM_LIMIT=2G", NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "apis");
    ck_assert_ptr_nonnull(strstr(out, "ok apis"));
}
END_TEST

START_TEST(every_api_refused)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "limit-all");
    ck_assert_ptr_nonnull(strstr(out, "ok every API refused"));
    ck_assert_msg(strstr(out, "gpumem: device 0: cuMemAlloc of 2.0 MiB "
                              "refused:") != NULL, "%s", out);
}
END_TEST

START_TEST(threads_no_drift)
{
    const char *env[] = { "GPUMEM_LIMIT=4G", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "threads", "100000");
    ck_assert_ptr_nonnull(strstr(out, "no drift"));
}
END_TEST

START_TEST(threads_tight_limit)
{
    /* Many refusals under contention still leave zero drift. */
    const char *env[] = { "GPUMEM_LIMIT=310M", "SIMCUDA_CONTEXT=300M",
                          "GPUMEM_LOG_LEVEL=error", NULL };
    RUN_OK(env, apicheck("link"), "--via", "link", "threads", "20000");
    ck_assert_ptr_nonnull(strstr(out, "no drift"));
}
END_TEST

static unsigned long long info_field(const char *key)
{
    const char *p = strstr(out, key);
    ck_assert_msg(p != NULL, "no %s in:\n%s", key, out);
    return strtoull(p + strlen(key), NULL, 10);
}

START_TEST(context_charged_and_virtualised)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "SIMCUDA_CONTEXT=200M", NULL };
    RUN_OK(env, apicheck("dlsym"), "--via", "dlsym", "info");
    ck_assert_uint_eq(info_field("total "), 1ull << 30);
    ck_assert_uint_eq(info_field("free "), (1ull << 30) - (200ull << 20));
}
END_TEST

START_TEST(no_limit_passes_through)
{
    const char *env[] = { "GPUMEM_LIMIT", "SIMCUDA_MEMORY=8G",
                          "SIMCUDA_CONTEXT=100M", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "info");
    ck_assert_uint_eq(info_field("total "), 8ull << 30);
    ck_assert_uint_eq(info_field("free "), (8ull << 30) - (100ull << 20));
}
END_TEST

START_TEST(percent_limit_resolves_against_physical)
{
    const char *env[] = { "GPUMEM_LIMIT=25%", "SIMCUDA_MEMORY=8G", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "info");
    ck_assert_uint_eq(info_field("total "), 2ull << 30);
}
END_TEST

START_TEST(share_limit_uses_local_ranks)
{
    const char *env[] = { "GPUMEM_LIMIT=share:0.5", "LOCAL_WORLD_SIZE=4",
                          "SIMCUDA_MEMORY=8G", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "info");
    ck_assert_uint_eq(info_field("total "), 1ull << 30);
}
END_TEST

START_TEST(limit_above_physical_clamps)
{
    const char *env[] = { "GPUMEM_LIMIT=100G", "SIMCUDA_MEMORY=8G", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "info");
    ck_assert_uint_eq(info_field("total "), 8ull << 30);
}
END_TEST

START_TEST(two_devices_two_limits)
{
    const char *env[] = { "SIMCUDA_DEVICES=2", "GPUMEM_LIMIT_0=1G",
                          "GPUMEM_LIMIT_1=2G", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "two", "1073741824",
           "2147483648");
}
END_TEST

START_TEST(pools_charge_their_reserve)
{
    const char *env[] = { "GPUMEM_LIMIT=2G", "GPUMEM_LOG_LEVEL=error", NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "pools", "2147483648");
    ck_assert_ptr_nonnull(strstr(out, "ok pools"));
}
END_TEST

/* The peak counts what the pool held, not a provisional reservation of a
 * request on top of the pool's growth for it. */
START_TEST(pool_peak_is_the_pool_high_water)
{
    char prefix[64], pe[96];
    snprintf(prefix, sizeof prefix, "gmtpk%d", (int)getpid());
    snprintf(pe, sizeof pe, "GPUMEM_SHM_PREFIX=%s", prefix);
    const char *env[] = { pe, "GPUMEM_LIMIT=2G", "GPUMEM_KEEP=1",
                          "SIMCUDA_CONTEXT=300M", NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "pool-peak",
           "2147483648");
    unsigned long long want = 0;
    const char *e = strstr(out, "expect peak ");
    ck_assert_msg(e && sscanf(e, "expect peak %llu", &want) == 1, "%s", out);
    int pids[4];
    ck_assert_int_eq(gm_reader_list(GM_READER_DEFAULT_DIR, prefix, pids, 4),
                     1);
    struct gm_seg s;
    char err[256];
    ck_assert_msg(gm_seg_open(&s, GM_READER_DEFAULT_DIR, prefix, pids[0], err,
                              sizeof err) == 0, "%s", err);
    static struct gm_snapshot snap;
    ck_assert_int_eq(gm_seg_snapshot(&s, &snap), 0);
    gm_seg_close(&s);
    char path[128];
    snprintf(path, sizeof path, "%s/%s.%d", GM_READER_DEFAULT_DIR, prefix,
             pids[0]);
    unlink(path);
    ck_assert_uint_eq(snap.dev[0].peak, want);
}
END_TEST

START_TEST(pool_threads_no_drift)
{
    const char *env[] = { "GPUMEM_LIMIT=4G", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "pool-threads");
    ck_assert_ptr_nonnull(strstr(out, "ok pool threads"));
}
END_TEST

START_TEST(mode_static)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "GPUMEM_MODE=static", NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "static");
    ck_assert_ptr_nonnull(strstr(out, "ok static"));
}
END_TEST

START_TEST(mode_staged)
{
    const char *env[] = { "GPUMEM_MODE=staged", "GPUMEM_WARMUP=200ms",
                          "GPUMEM_HEADROOM=10%", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "staged");
    ck_assert_ptr_nonnull(strstr(out, "ok staged"));
    ck_assert_msg(strstr(out, "limit frozen at") != NULL, "%s", out);
}
END_TEST

START_TEST(oom_wait_release)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "GPUMEM_ON_OOM=wait:5s", NULL };
    RUN_OK(env, apicheck("link"), "--via", "link", "wait", "release", "5000");
    ck_assert_msg(strstr(out, "waits for memory") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "served after") != NULL, "%s", out);
}
END_TEST

START_TEST(oom_wait_timeout)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "GPUMEM_ON_OOM=wait:300ms",
                          NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "wait", "timeout", "300");
    ck_assert_msg(strstr(out, "gave up waiting") != NULL, "%s", out);
}
END_TEST

START_TEST(oom_spill)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "GPUMEM_ON_OOM=spill", NULL };
    RUN_OK(env, apicheck("dlsym"), "--via", "dlsym", "spill");
    ck_assert_msg(strstr(out, "served as managed memory") != NULL, "%s", out);
}
END_TEST

START_TEST(oom_warn)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "GPUMEM_ON_OOM=warn", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "warn");
    ck_assert_msg(strstr(out, "allowed past the limit") != NULL, "%s", out);
}
END_TEST

START_TEST(fork_child_is_clean)
{
    const char *env[] = { "GPUMEM_LIMIT=4G", NULL };
    RUN_OK(env, apicheck("link"), "--via", "link", "fork");
    ck_assert_ptr_nonnull(strstr(out, "ok child"));
}
END_TEST

START_TEST(cuda_in_a_constructor_is_counted)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "SIMCUDA_CONTEXT=100M", NULL };
    RUN_OK(env, gm_bpath("tests/progs/ctorcuda"));
    ck_assert_msg(strstr(out, "rc 0 ") != NULL, "%s", out);
    ck_assert_uint_eq(info_field("total "), 1ull << 30);
    ck_assert_uint_eq(info_field("free "), (1ull << 30) - (200ull << 20));
}
END_TEST

START_TEST(policy_command)
{
    const char *good[] = { "GPUMEM_LIMIT=4G", "GPUMEM_MODE=static", NULL };
    const char *argv[] = { gm_bpath("gpumem"), "policy", NULL };
    int rc = gm_run(good, 0, argv, out, sizeof out);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "4294967296") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "static") != NULL, "%s", out);
    const char *jargv[] = { gm_bpath("gpumem"), "policy", "--json", NULL };
    rc = gm_run(good, 0, jargv, out, sizeof out);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(out[0] == '{' && strstr(out, "\"GPUMEM_LIMIT\"") != NULL,
                  "%s", out);
    const char *bad[] = { "GPUMEM_LIMIT=4 gigs", "GPUMEM_LIMT=1G", NULL };
    rc = gm_run(bad, 0, argv, out, sizeof out);
    ck_assert_int_eq(rc, 2);
    ck_assert_msg(strstr(out, "GPUMEM_LIMIT='4 gigs' is not a size") != NULL,
                  "%s", out);
    ck_assert_msg(strstr(out, "did you mean GPUMEM_LIMIT") != NULL, "%s", out);
}
END_TEST

static unsigned long long json_num(const char *json, const char *key)
{
    char k[96];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(json, k);
    ck_assert_msg(p != NULL, "no %s in %s", key, json);
    return strtoull(p + strlen(k), NULL, 10);
}

static void read_report(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no report at %s", path);
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    unlink(path);
}

/* The JSON exit report against a workload whose figures are known:
 * trainsim's own counts and peak, plus the simulated context. */
START_TEST(exit_report_exact)
{
    static char rep[1 << 14];
    char path[128], re[160];
    snprintf(path, sizeof path, "/tmp/gmt-report-%d.json", (int)getpid());
    snprintf(re, sizeof re, "GPUMEM_REPORT=json:%s", path);
    const char *env[] = { "GPUMEM_LIMIT=2G", "SIMCUDA_CONTEXT=300M", re,
                          NULL };
    RUN_OK(env, gm_bpath("gpumem-trainsim"), "--steps", "20", "--quiet");
    ck_assert_msg(strstr(out, "516 allocs, 516 frees, peak 244.0 MiB "
                              "(255852544 bytes)") != NULL, "%s", out);
    read_report(path, rep, sizeof rep);
    ck_assert_uint_eq(json_num(rep, "allocs"), 516);
    ck_assert_uint_eq(json_num(rep, "frees"), 516);
    ck_assert_uint_eq(json_num(rep, "refused"), 0);
    ck_assert_uint_eq(json_num(rep, "context_bytes"), 300ull << 20);
    ck_assert_uint_eq(json_num(rep, "peak_bytes"), 255852544ull + (300ull << 20));
    ck_assert_uint_eq(json_num(rep, "limit_bytes"), 2ull << 30);
    ck_assert_uint_eq(json_num(rep, "live_allocs"), 0);
    ck_assert_uint_eq(json_num(rep, "events_lost"), 0);
    /* The leak check: 10 steps leaking 1 MiB each. */
    const char *env2[] = { "GPUMEM_LIMIT=2G", re, NULL };
    RUN_OK(env2, gm_bpath("gpumem-trainsim"), "--steps", "10", "--leak", "1M",
           "--quiet");
    read_report(path, rep, sizeof rep);
    ck_assert_uint_eq(json_num(rep, "live_allocs"), 10);
    ck_assert_uint_eq(json_num(rep, "live_bytes"), 10ull << 20);
}
END_TEST

START_TEST(bad_config_exits_2)
{
    const char *env[] = { "GPUMEM_LIMIT=4 gigs", NULL };
    const char *argv[] = { apicheck("gpa"), "--via", "gpa", "info", NULL };
    int rc = gm_run(env, 1, argv, out, sizeof out);
    ck_assert_int_eq(rc, 2);
    ck_assert_msg(strstr(out, "GPUMEM_LIMIT='4 gigs'") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "free ") == NULL, "ran anyway: %s", out);
}
END_TEST

START_TEST(bad_config_warn_runs)
{
    const char *env[] = { "GPUMEM_LIMIT=4 gigs", "GPUMEM_ON_BAD_CONFIG=warn",
                          "SIMCUDA_MEMORY=8G", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "info");
    ck_assert_msg(strstr(out, "GPUMEM_LIMIT='4 gigs'") != NULL, "%s", out);
    ck_assert_uint_eq(info_field("total "), 8ull << 30); /* no limit */
}
END_TEST

static int count_segments(const char *prefix)
{
    DIR *d = opendir("/dev/shm");
    int n = 0;
    if (d == NULL)
        return 0;
    struct dirent *e;
    size_t l = strlen(prefix);
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, l) == 0 && e->d_name[l] == '.')
            n++;
    closedir(d);
    return n;
}

START_TEST(no_cuda_no_cost)
{
    char prefix[64], pe[96];
    snprintf(prefix, sizeof prefix, "gmtnocuda%d", (int)getpid());
    snprintf(pe, sizeof pe, "GPUMEM_SHM_PREFIX=%s", prefix);
    /* Even a bad configuration is not read by a process without CUDA. */
    const char *env[] = { pe, "GPUMEM_LIMIT=garbage", "GPUMEM_KEEP=1", NULL };
    const char *argv[] = { "/bin/sh", "-c", "echo hello", NULL };
    int rc = gm_run(env, 1, argv, out, sizeof out);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(out, "hello\n");
    ck_assert_int_eq(count_segments(prefix), 0);
}
END_TEST

START_TEST(cuda_process_gets_a_segment)
{
    char prefix[64], pe[96];
    snprintf(prefix, sizeof prefix, "gmtseg%d", (int)getpid());
    snprintf(pe, sizeof pe, "GPUMEM_SHM_PREFIX=%s", prefix);
    const char *env[] = { pe, "GPUMEM_LIMIT=1G", "GPUMEM_KEEP=1", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "info");
    ck_assert_int_eq(count_segments(prefix), 1);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -f /dev/shm/%s.*", prefix);
    ck_assert_int_eq(system(cmd), 0);
    const char *env2[] = { pe, "GPUMEM_LIMIT=1G", NULL };
    RUN_OK(env2, apicheck("gpa"), "--via", "gpa", "info");
    ck_assert_int_eq(count_segments(prefix), 0); /* removed at exit */
}
END_TEST

/* GPUMEM_TELEMETRY=0: the same exact limit edge and every API charged
 * and refused, through every path, with no segment at all. */
START_TEST(telemetry_off_limits_only)
{
    char prefix[64], pe[96];
    snprintf(prefix, sizeof prefix, "gmtoff%d", (int)getpid());
    snprintf(pe, sizeof pe, "GPUMEM_SHM_PREFIX=%s", prefix);
    const char *env[] = { pe, "GPUMEM_TELEMETRY=0", "GPUMEM_LIMIT=1G",
                          "SIMCUDA_CONTEXT=300M", "GPUMEM_KEEP=1", NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "edge", "1073741824");
    char want[64];
    snprintf(want, sizeof want, "%llu bytes fit",
             (unsigned long long)((1ull << 30) - 300ull * (1 << 20)));
    ck_assert_msg(strstr(out, want) != NULL, "%s", out);
    const char *env2[] = { pe, "GPUMEM_TELEMETRY=0", "GPUMEM_LIMIT=2G", NULL };
    RUN_OK(env2, apicheck(vias[_i]), "--via", vias[_i], "apis");
    ck_assert_ptr_nonnull(strstr(out, "ok apis"));
    const char *env3[] = { pe, "GPUMEM_TELEMETRY=0", "GPUMEM_LIMIT=1G", NULL };
    RUN_OK(env3, apicheck(vias[_i]), "--via", vias[_i], "limit-all");
    ck_assert_ptr_nonnull(strstr(out, "ok every API refused"));
    const char *env4[] = { pe, "GPUMEM_TELEMETRY=0", "GPUMEM_LIMIT=1G", NULL };
    RUN_OK(env4, apicheck(vias[_i]), "--via", vias[_i], "threads");
    ck_assert_int_eq(count_segments(prefix), 0);
}
END_TEST

/* A report needs the segment: asking for both is a bad configuration. */
START_TEST(telemetry_off_with_report_exits_2)
{
    const char *env[] = { "GPUMEM_TELEMETRY=0", "GPUMEM_REPORT=1", NULL };
    const char *argv[] = { apicheck("gpa"), "--via", "gpa", "info", NULL };
    int rc = gm_run(env, 1, argv, out, sizeof out);
    ck_assert_int_eq(rc, 2);
    ck_assert_msg(strstr(out, "GPUMEM_REPORT='1' needs telemetry, but "
                              "GPUMEM_TELEMETRY=0 turns it off") != NULL,
                  "%s", out);
}
END_TEST

/* (name, cudaVersion, flags, the exported variant it must map to): every
 * wrapped function in ../shared/reference/cuda-lookups.tsv, plus the
 * version edges. Compared with what RTLD_DEFAULT finds for the variant
 * (our wrapper under the shim, the driver's own without it). */
static const char *const gpa_cases[] = {
    "cuMemAlloc", "3020", "0", "cuMemAlloc_v2",
    "cuMemAlloc", "2000", "0", "cuMemAlloc",
    "cuMemAllocPitch", "3020", "0", "cuMemAllocPitch_v2",
    "cuMemAllocPitch", "3010", "0", "cuMemAllocPitch",
    "cuMemFree", "3020", "0", "cuMemFree_v2",
    "cuMemAllocManaged", "6000", "0", "cuMemAllocManaged",
    "cuMemAllocAsync", "11020", "0", "cuMemAllocAsync",
    "cuMemAllocAsync", "11020", "2", "cuMemAllocAsync_ptsz",
    "cuMemAllocFromPoolAsync", "11020", "0", "cuMemAllocFromPoolAsync",
    "cuMemAllocFromPoolAsync", "11020", "2", "cuMemAllocFromPoolAsync_ptsz",
    "cuMemFreeAsync", "11020", "0", "cuMemFreeAsync",
    "cuMemFreeAsync", "11020", "2", "cuMemFreeAsync_ptsz",
    "cuMemCreate", "10020", "0", "cuMemCreate",
    "cuMemRelease", "10020", "0", "cuMemRelease",
    "cuMemRetainAllocationHandle", "11000", "0", "cuMemRetainAllocationHandle",
    "cuArrayCreate", "3020", "0", "cuArrayCreate_v2",
    "cuArray3DCreate", "3020", "0", "cuArray3DCreate_v2",
    "cuArrayDestroy", "2000", "0", "cuArrayDestroy",
    "cuMipmappedArrayCreate", "5000", "0", "cuMipmappedArrayCreate",
    "cuMipmappedArrayDestroy", "5000", "0", "cuMipmappedArrayDestroy",
    "cuMemHostAlloc", "2020", "0", "cuMemHostAlloc",
    "cuMemAllocHost", "3020", "0", "cuMemAllocHost_v2",
    "cuMemFreeHost", "2000", "0", "cuMemFreeHost",
    "cuMemGetInfo", "3020", "0", "cuMemGetInfo_v2",
    "cuMemGetInfo", "2000", "0", "cuMemGetInfo",
    "cuDeviceTotalMem", "3020", "0", "cuDeviceTotalMem_v2",
    "cuCtxCreate", "3020", "0", "cuCtxCreate_v2",
    "cuCtxCreate", "11040", "0", "cuCtxCreate_v3",
    "cuCtxCreate", "13000", "0", "cuCtxCreate_v4",
    "cuDevicePrimaryCtxRetain", "7000", "0", "cuDevicePrimaryCtxRetain",
    "cuGetProcAddress", "11030", "0", "cuGetProcAddress",
    "cuGetProcAddress", "12000", "0", "cuGetProcAddress_v2",
    NULL,
};

static void run_gpa(int preload)
{
    const char *argv[256];
    int n = 0;
    argv[n++] = gm_bpath("tests/progs/apicheck");
    argv[n++] = "gpa";
    for (int i = 0; gpa_cases[i]; i++)
        argv[n++] = gpa_cases[i];
    argv[n] = NULL;
    int rc = gm_run(NULL, preload, argv, out, sizeof out);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
}

START_TEST(gpa_variants_under_shim)
{
    run_gpa(1);
}
END_TEST

START_TEST(gpa_variants_without_shim)
{
    run_gpa(0);
}
END_TEST

START_TEST(rtld_next_caller_preserved)
{
    const char *argv[] = { gm_bpath("tests/progs/rtldnext"), NULL };
    int rc = gm_run(NULL, 0, argv, out, sizeof out);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(out, "2\n");
    rc = gm_run(NULL, 1, argv, out, sizeof out);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(out, "2\n");
}
END_TEST

START_TEST(dlsym_is_a_tail_call)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "objdump -d --no-show-raw-insn %s | awk '/<dlsym>:/{p=1;next} "
             "p&&/^$/{exit} p' > %s/dlsym.dis",
             gm_bpath("libgpumem.so"), gm_build_dir());
    ck_assert_int_eq(system(cmd), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/dlsym.dis", gm_build_dir());
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    fclose(f);
    out[n] = '\0';
    ck_assert_msg(n > 0, "no dlsym in the disassembly");
    /* The forward to glibc is an indirect jmp; no indirect call. */
    ck_assert_msg(strstr(out, "jmp    *%") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "call   *%") == NULL, "%s", out);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("shim");
    TCase *t = tcase_create("paths");
    tcase_set_timeout(t, 60);
    tcase_add_loop_test(t, edge_exact, 0, 3);
    tcase_add_loop_test(t, every_api_charged, 0, 3);
    tcase_add_loop_test(t, every_api_refused, 0, 3);
    tcase_add_test(t, gpa_variants_under_shim);
    tcase_add_test(t, gpa_variants_without_shim);
    tcase_add_test(t, rtld_next_caller_preserved);
    tcase_add_test(t, dlsym_is_a_tail_call);
    suite_add_tcase(s, t);
    TCase *a = tcase_create("accounting");
    tcase_set_timeout(a, 120);
    tcase_add_test(a, threads_no_drift);
    tcase_add_test(a, threads_tight_limit);
    tcase_add_test(a, context_charged_and_virtualised);
    tcase_add_test(a, no_limit_passes_through);
    tcase_add_test(a, percent_limit_resolves_against_physical);
    tcase_add_test(a, share_limit_uses_local_ranks);
    tcase_add_test(a, limit_above_physical_clamps);
    tcase_add_test(a, two_devices_two_limits);
    tcase_add_test(a, fork_child_is_clean);
    tcase_add_loop_test(a, pools_charge_their_reserve, 0, 3);
    tcase_add_test(a, pool_threads_no_drift);
    suite_add_tcase(s, a);
    TCase *m = tcase_create("modes");
    tcase_set_timeout(m, 60);
    tcase_add_loop_test(m, mode_static, 0, 3);
    tcase_add_test(m, mode_staged);
    tcase_add_test(m, oom_wait_release);
    tcase_add_test(m, oom_wait_timeout);
    tcase_add_test(m, oom_spill);
    tcase_add_test(m, oom_warn);
    suite_add_tcase(s, m);
    TCase *l = tcase_create("lifecycle");
    tcase_set_timeout(l, 60);
    tcase_add_test(l, cuda_in_a_constructor_is_counted);
    tcase_add_test(l, policy_command);
    tcase_add_test(l, exit_report_exact);
    tcase_add_test(l, bad_config_exits_2);
    tcase_add_test(l, bad_config_warn_runs);
    tcase_add_test(l, no_cuda_no_cost);
    tcase_add_test(l, cuda_process_gets_a_segment);
    tcase_add_loop_test(l, telemetry_off_limits_only, 0, 3);
    tcase_add_loop_test(l, pool_peak_is_the_pool_high_water, 0, 3);
    tcase_add_test(l, telemetry_off_with_report_exits_2);
    suite_add_tcase(s, l);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
