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
#include <sys/resource.h>
#include <sys/stat.h>
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

/* apicheck's scenario `sc` by lookup path `via` under env: exits 0 and
 * says "ok <sc>". */
static void scenario_ok(const char *const *env, const char *via,
                        const char *sc)
{
    char ok[64];
    RUN_OK(env, apicheck(via), "--via", via, sc);
    snprintf(ok, sizeof ok, "ok %s", sc);
    ck_assert_msg(strstr(out, ok) != NULL, "%s", out);
}

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
    scenario_ok(env, vias[_i], "apis");
}
END_TEST

/* A handle released while mapped keeps its charge until its unmap. */
START_TEST(mapped_handle_stays_charged)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", NULL };
    scenario_ok(env, vias[_i], "vmm-held");
}
END_TEST

/* A pool growth undone at the limit leaves its moment in the published
 * peak, as in the accounting's. */
START_TEST(undone_pool_growth_is_in_the_peak)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", NULL };
    scenario_ok(env, vias[_i], "async-peak");
}
END_TEST

START_TEST(mipmaps_charged_their_clamped_levels)
{
    const char *env[] = { "GPUMEM_LIMIT=2G", NULL };
    scenario_ok(env, vias[_i], "mipmap-levels");
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

static unsigned long long json_num(const char *json, const char *key);
static void read_report(const char *path, char *buf, size_t cap);

/* A file size limit below the report's size: the report is lost with a
 * message, the program is not killed by SIGXFSZ at exit, and no temporary
 * file is left beside the path. */
START_TEST(report_over_fsize_limit_is_lost_cleanly)
{
    char dir[128], path[200], re[220];
    snprintf(dir, sizeof dir, "/tmp/gmt-fsize-%d-XXXXXX", (int)getpid());
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/r.json", dir);
    snprintf(re, sizeof re, "GPUMEM_REPORT=json:%s", path);
    const char *env[] = { "SIMCUDA_MEMORY=16G", re, NULL };
    const char *argv[] = { apicheck("link"), "--via", "link", "try",
                           "268435456", NULL };
    /* The limit is inherited by the program; it is lifted again before
     * check writes its own results to a file. */
    struct rlimit rl, low;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
    low = rl;
    low.rlim_cur = 300;
    int set = setrlimit(RLIMIT_FSIZE, &low);
    int rc = gm_run(env, 1, argv, out, sizeof out);
    int unset = setrlimit(RLIMIT_FSIZE, &rl);
    ck_assert_int_eq(set, 0);
    ck_assert_int_eq(unset, 0);
    int left = 0;
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char f[520];
        snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
        unlink(f);
        left++;
    }
    closedir(d);
    rmdir(dir);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
    ck_assert_msg(strstr(out, "the report is lost") != NULL &&
                  strstr(out, "RLIMIT_FSIZE, 300 bytes") != NULL, "%s", out);
    ck_assert_msg(left == 0, "%d file(s) left in %s", left, dir);
}
END_TEST

/* Every context counts against the limit while it lives (apicheck's
 * contexts scenario), through each lookup path; the exit report's context
 * figure is the most context memory held at once. */
START_TEST(every_context_charged_until_its_end)
{
    char rep[256], env_rep[300];
    snprintf(rep, sizeof rep, "/tmp/gm-ctx-%d-%d.json", (int)getpid(), _i);
    snprintf(env_rep, sizeof env_rep, "GPUMEM_REPORT=json:%s", rep);
    const char *env[] = { "GPUMEM_LIMIT=1G", "SIMCUDA_CONTEXT=200M", env_rep,
                          NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "contexts");
    ck_assert_msg(strstr(out, "ok contexts") != NULL, "%s", out);
    static char json[65536];
    read_report(rep, json, sizeof json);
    ck_assert_uint_eq(json_num(json, "context_peak_bytes"), 400ull << 20);
    ck_assert_uint_eq(json_num(json, "context_bytes"), 200ull << 20);
    /* The byte past the limit and the context past it. */
    ck_assert_uint_eq(json_num(json, "refused"), 2);
}
END_TEST

/* apicheck's scenario sc through via under limit (and 200 MiB contexts),
 * which says "ok SC" when it passed. */
static void ctx_scenario(const char *limit, const char *via, const char *sc)
{
    char lim[64], ok[64];
    snprintf(lim, sizeof lim, "GPUMEM_LIMIT=%s", limit);
    snprintf(ok, sizeof ok, "ok %s\n", sc);
    const char *env[] = { lim, "SIMCUDA_CONTEXT=200M", NULL };
    RUN_OK(env, apicheck(via), "--via", via, sc);
    ck_assert_msg(strstr(out, ok) != NULL, "%s", out);
}

/* A context's end frees the memory made in it, and its charge comes back
 * at once (apicheck's ctx-frees): a created context next to the primary
 * one, then the primary context reset; the limit's room is usable again. */
START_TEST(a_contexts_end_gives_back_its_memory)
{
    ctx_scenario("1G", vias[_i], "ctx-frees");
}
END_TEST

/* Contexts ending while another thread allocates and frees at the
 * addresses they had: nothing of the living thread is taken for the
 * dead, nothing dead stays charged (apicheck's ctx-frees-race). */
START_TEST(context_ends_race_a_living_thread)
{
    ctx_scenario("4G", "gpa", "ctx-frees-race");
}
END_TEST

/* The context an arena was made in ends: the arena is retired, the
 * primary context made again is charged, allocations go to the driver. */
START_TEST(static_arena_ends_with_its_context)
{
    char rep[256], env_rep[300];
    snprintf(rep, sizeof rep, "/tmp/gm-sctx-%d-%d.json", (int)getpid(), _i);
    snprintf(env_rep, sizeof env_rep, "GPUMEM_REPORT=json:%s", rep);
    const char *env[] = { "GPUMEM_LIMIT=1G", "GPUMEM_MODE=static",
                          "SIMCUDA_CONTEXT=200M", env_rep, NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "static-ctx");
    ck_assert_msg(strstr(out, "ok static-ctx") != NULL, "%s", out);
    /* The arena's piece went with the context: not live, not a free. */
    static char json[65536];
    read_report(rep, json, sizeof json);
    ck_assert_uint_eq(json_num(json, "live_allocs"), 0);
    ck_assert_uint_eq(json_num(json, "context_freed_bytes"), 64ull << 20);
    ck_assert_uint_eq(json_num(json, "allocs") - json_num(json, "frees"), 1);
}
END_TEST

/* A created context is refused past the limit even as a device's first. */
START_TEST(first_created_context_past_the_limit_refused)
{
    const char *env[] = { "GPUMEM_LIMIT=100M", "SIMCUDA_CONTEXT=200M", NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "first-create");
    ck_assert_msg(strstr(out, "cuCtxCreate refused") != NULL, "%s", out);
}
END_TEST

/* A created context that the process's limit has room for but its group
 * has not is refused too. */
START_TEST(created_context_past_the_group_refused)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "SIMCUDA_CONTEXT=200M",
                          "GPUMEM_GROUP=ctxgroup", "GPUMEM_GROUP_LIMIT=300M",
                          NULL };
    RUN_OK(env, apicheck("dlsym"), "--via", "dlsym", "ctx-group");
    ck_assert_msg(strstr(out, "does not fit in group 'ctxgroup'") != NULL, "%s",
                  out);
}
END_TEST

/* The same under GPUMEM_ON_OOM=warn: it softens the process limit only;
 * the group's stays hard for a context too. */
START_TEST(created_context_past_the_group_refused_under_warn)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "SIMCUDA_CONTEXT=200M",
                          "GPUMEM_GROUP=ctxgroupw", "GPUMEM_GROUP_LIMIT=300M",
                          "GPUMEM_ON_OOM=warn", NULL };
    RUN_OK(env, apicheck("dlsym"), "--via", "dlsym", "ctx-group");
    ck_assert_msg(strstr(out, "does not fit in group 'ctxgroupw'") != NULL,
                  "%s", out);
}
END_TEST

/* Four threads retaining and releasing the primary context: charged
 * whenever one holds it, nothing left when none does. */
START_TEST(primary_retain_release_race)
{
    ctx_scenario("1G", "dlsym", "primary-race");
}
END_TEST

/* Static mode: free memory is what the arena can still hand out, not 0
 * because the arena is charged whole. */
START_TEST(static_mode_free_is_the_arena_room)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "GPUMEM_MODE=static",
                          "SIMCUDA_CONTEXT=200M", NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "info");
    ck_assert_uint_eq(info_field("total "), 1ull << 30);
    /* The arena is the room after the context, rounded down to 2 MiB. */
    ck_assert_uint_eq(info_field("free "), (1ull << 30) - (200ull << 20));
}
END_TEST

/* Without a limit, requests no driver can serve get the driver's own
 * answer, and a device that does not exist leaves no trace. */
START_TEST(invalid_requests_get_the_drivers_answer)
{
    static char plain[4096];
    const char *env[] = { "GPUMEM_REPORT=1", NULL };
    const char *argv[] = { apicheck(vias[_i]), "--via", vias[_i], "invalid",
                           NULL };
    ck_assert_int_eq(gm_run(env, 0, argv, plain, sizeof plain), 0);
    ck_assert_msg(strstr(plain, "create-max rc 0") == NULL, "%s", plain);
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "invalid");
    const char *lines[] = { "create-max rc ", "create-dev63 rc ",
                            "array-huge rc ", "alloc-max rc " };
    for (size_t k = 0; k < sizeof lines / sizeof lines[0]; k++) {
        const char *a = strstr(plain, lines[k]), *b = strstr(out, lines[k]);
        ck_assert_msg(a != NULL && b != NULL, "%s missing:\n%s", lines[k], out);
        ck_assert_msg(strncmp(a, b, strcspn(a, "\n")) == 0,
                      "driver: %.*s, under the shim: %.*s",
                      (int)strcspn(a, "\n"), a, (int)strcspn(b, "\n"), b);
    }
    ck_assert_msg(strstr(out, "device 63") == NULL, "phantom device:\n%s", out);
    ck_assert_msg(strstr(out, "device 0:") != NULL, "no report:\n%s", out);
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

/* Stream-ordered memory is charged to, and refused against, the device
 * that serves it: the stream's, the pool's (apicheck
 * s_async_other_device). */
START_TEST(async_charged_to_the_serving_device)
{
    const char *env[] = { "SIMCUDA_DEVICES=2", "GPUMEM_LIMIT_0=4G",
                          "GPUMEM_LIMIT_1=2G", "GPUMEM_LOG_LEVEL=error",
                          NULL };
    scenario_ok(env, vias[_i], "async-other-device");
}
END_TEST

/* A device's default pool used before that device has a context is
 * charged to that device, and its context is measured apart from the
 * memory held before it (apicheck s_pool_before_context). */
START_TEST(pool_of_a_device_without_a_context)
{
    const char *env[] = { "SIMCUDA_DEVICES=2", "GPUMEM_LIMIT_0=4G",
                          "GPUMEM_LIMIT_1=2G", "GPUMEM_LOG_LEVEL=error",
                          NULL };
    scenario_ok(env, vias[_i], "pool-before-context");
}
END_TEST

START_TEST(pools_charge_their_reserve)
{
    const char *env[] = { "GPUMEM_LIMIT=2G", "GPUMEM_LOG_LEVEL=error", NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "pools", "2147483648");
    ck_assert_ptr_nonnull(strstr(out, "ok pools"));
}
END_TEST

/* A repeated block is settled without asking the driver for the pool's
 * reserve; syncs, trims and larger blocks ask again (tests/progs/apicheck.c
 * s_pool_queries). */
START_TEST(repeated_pool_blocks_need_no_query)
{
    const char *env[] = { "GPUMEM_LIMIT=2G", "GPUMEM_LOG_LEVEL=error", NULL };
    scenario_ok(env, vias[_i], "pool-queries");
}
END_TEST

/* A pool destroyed with a live block keeps its charge until the block is
 * freed. */
START_TEST(pool_destroyed_with_live_blocks_stays_charged)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", NULL };
    scenario_ok(env, vias[_i], "pool-destroy-live");
}
END_TEST

/* Refreshes of one device's pools racing from four threads: once they are
 * all done (and the pool trimmed to nothing), the published pool reserve
 * is the pool's, 0, never a figure an out-of-order update left behind. */
START_TEST(published_pool_reserve_ends_exact)
{
    char prefix[64], pe[96];
    snprintf(prefix, sizeof prefix, "gmtpool%d", (int)getpid());
    snprintf(pe, sizeof pe, "GPUMEM_SHM_PREFIX=%s", prefix);
    const char *env[] = { pe, "GPUMEM_LIMIT=2G", "GPUMEM_KEEP=1", NULL };
    for (int round = 0; round < 2; round++) {
        RUN_OK(env, apicheck("gpa"), "--via", "gpa", "pool-threads");
        int pids[4];
        ck_assert_int_eq(gm_reader_list("/dev/shm", prefix, pids, 4), 1);
        struct gm_seg seg;
        char err[256];
        ck_assert_msg(gm_seg_open(&seg, "/dev/shm", prefix, pids[0], err,
                                  sizeof err) == 0, "%s", err);
        static struct gm_snapshot snap;
        ck_assert_int_ge(gm_seg_snapshot(&seg, &snap), 0);
        gm_seg_close(&seg);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -f /dev/shm/%s.*", prefix);
        ck_assert_int_eq(system(cmd), 0);
        ck_assert_msg(snap.dev[0].pool_reserve == 0,
                      "round %d: published pool reserve %llu, pool holds 0",
                      round, (unsigned long long)snap.dev[0].pool_reserve);
    }
}
END_TEST

/* A group member's idle pool memory is charged to the group. */
START_TEST(idle_pool_memory_counts_in_the_group)
{
    char g[64], ge[96];
    snprintf(g, sizeof g, "GPUMEM_GROUP=gp%d", (int)getpid());
    snprintf(ge, sizeof ge, "%s", g);
    const char *env[] = { ge, "GPUMEM_GROUP_LIMIT=1G", "GPUMEM_LIMIT=4G",
                          "SIMCUDA_CONTEXT=100M", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "group-pool", "1073741824");
    ck_assert_ptr_nonnull(strstr(out, "ok group-pool"));
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
    scenario_ok(env, vias[_i], "static");
}
END_TEST

/* A stream-ordered free of an arena block goes back to the arena, after
 * its stream's work (tests/progs/apicheck.c s_static_free_async). */
START_TEST(static_free_async_returns_to_the_arena)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "GPUMEM_MODE=static", NULL };
    scenario_ok(env, vias[_i], "static-free-async");
}
END_TEST

/* Static mode honours GPUMEM_ON_OOM for what its arena cannot serve
 * (tests/progs/apicheck.c s_static_oom): spill serves managed memory,
 * warn the driver's past the limit, wait waits for the arena's frees;
 * each freed where it came from, the figures back where they were. */
START_TEST(static_arena_full_spills)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "GPUMEM_MODE=static",
                          "GPUMEM_ON_OOM=spill", NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "static-oom",
           "spill");
    ck_assert_msg(strstr(out, "ok static-oom spill") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "gpumem: device 0: cuMemAlloc of 10.0 MiB "
                              "served as managed memory: the static arena "
                              "(") != NULL, "%s", out);
}
END_TEST

START_TEST(static_arena_full_warns)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "GPUMEM_MODE=static",
                          "GPUMEM_ON_OOM=warn", NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "static-oom", "warn");
    ck_assert_msg(strstr(out, "ok static-oom warn") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "gpumem: device 0: cuMemAlloc of 10.0 MiB "
                              "allowed past the limit, from the driver "
                              "outside the arena: the static arena (")
                      != NULL, "%s", out);
}
END_TEST

START_TEST(static_arena_full_waits)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "GPUMEM_MODE=static",
                          "GPUMEM_ON_OOM=wait:1s", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "static-oom", "wait",
           "1000");
    ck_assert_msg(strstr(out, "ok static-oom wait") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "served after") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "gave up waiting") != NULL, "%s", out);
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

/* The longest waits GPUMEM_ON_OOM takes are waits: their end, past the
 * clock's range, is held at its last instant, not wrapped to the past. */
START_TEST(oom_wait_longest_waits)
{
    const char *w[] = { "GPUMEM_ON_OOM=wait:18446744073709551615ns",
                        "GPUMEM_ON_OOM=wait:5124095h" };
    for (int i = 0; i < 2; i++) {
        const char *env[] = { "GPUMEM_LIMIT=1G", w[i], NULL };
        RUN_OK(env, apicheck("gpa"), "--via", "gpa", "wait", "release",
               "5000");
        ck_assert_msg(strstr(out, "served after") != NULL, "%s: %s", w[i],
                      out);
    }
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
    const char *c = strstr(out, "ok child: own accounting (pid ");
    ck_assert_ptr_nonnull(c);
    /* The child left with _exit: its segment stays, as a killed
     * process's does, until removed (here; `gpumem gc` for users). */
    int child = atoi(c + strlen("ok child: own accounting (pid "));
    const char *prefix = getenv("GPUMEM_SHM_PREFIX");
    char path[160];
    snprintf(path, sizeof path, "/dev/shm/%s.%d",
             prefix && *prefix ? prefix : "gpumem", child);
    /* The child initialised again (its own segment), though its
     * parent's run took the plain path. */
    ck_assert_msg(access(path, F_OK) == 0, "no segment %s", path);
    unlink(path);
}
END_TEST

/* A peer of our uid overwrites the layout fields of the live segment's
 * header: the writer keeps to the layout it made (no stray write, no
 * crash), accounting and the exit report go on. */
START_TEST(scribbled_header_is_not_trusted)
{
    const char *env[] = { "GPUMEM_LIMIT=4G", "GPUMEM_REPORT=stderr", NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "scribble");
    ck_assert_msg(strstr(out, "ok scribble") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "1001 allocs, 1001 frees, 1 refused") != NULL,
                  "%s", out);
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
    ck_assert_uint_eq(json_num(rep, "context_peak_bytes"), 300ull << 20);
    ck_assert_uint_eq(json_num(rep, "context_bytes"), 0); /* released */
    ck_assert_uint_eq(json_num(rep, "peak_bytes"), 255852544ull + (300ull << 20));
    ck_assert_uint_eq(json_num(rep, "limit_bytes"), 2ull << 30);
    ck_assert_uint_eq(json_num(rep, "live_allocs"), 0);
    ck_assert_uint_eq(json_num(rep, "events_lost"), 0);
    ck_assert_uint_eq(json_num(rep, "context_freed_bytes"), 0);
    /* The leak check: 10 steps leaking 1 MiB each, which trainsim's last
     * release of the primary context frees: nothing is live at the exit,
     * and the report says what the program left to the context's end. */
    const char *env2[] = { "GPUMEM_LIMIT=2G", re, NULL };
    RUN_OK(env2, gm_bpath("gpumem-trainsim"), "--steps", "10", "--leak", "1M",
           "--quiet");
    read_report(path, rep, sizeof rep);
    ck_assert_uint_eq(json_num(rep, "live_allocs"), 0);
    ck_assert_uint_eq(json_num(rep, "live_bytes"), 0);
    ck_assert_uint_eq(json_num(rep, "context_freed_bytes"), 10ull << 20);
    ck_assert_uint_eq(json_num(rep, "allocs") - json_num(rep, "frees"), 10);
    /* Left to the process's end (--keep-context, as frameworks do), the
     * leaks are live at the exit. */
    RUN_OK(env2, gm_bpath("gpumem-trainsim"), "--steps", "10", "--leak", "1M",
           "--keep-context", "--quiet");
    read_report(path, rep, sizeof rep);
    ck_assert_uint_eq(json_num(rep, "live_allocs"), 10);
    ck_assert_uint_eq(json_num(rep, "live_bytes"), 10ull << 20);
    ck_assert_uint_eq(json_num(rep, "context_freed_bytes"), 0);
    ck_assert_uint_eq(json_num(rep, "context_bytes"), 300ull << 20);
}
END_TEST

/* A report path where someone planted a symlink: the report is lost with
 * a message, the link stays and the file it points to is untouched; the
 * same for a second name (hard link) of a file, and, as root, for another
 * user's file. */
START_TEST(report_never_follows_a_symlink)
{
    static char rep[1 << 14];
    char dir[] = "/tmp/gmt-replink-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char victim[128], path[128], hard[128], re[160];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(path, sizeof path, "%s/report.json", dir);
    snprintf(hard, sizeof hard, "%s/hard.json", dir);
    FILE *v = fopen(victim, "w");
    ck_assert_ptr_nonnull(v);
    fputs("precious\n", v);
    fclose(v);
    ck_assert_int_eq(symlink(victim, path), 0);
    snprintf(re, sizeof re, "GPUMEM_REPORT=json:%s", path);
    const char *env[] = { "GPUMEM_LIMIT=1G", re, NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "info");
    ck_assert_msg(strstr(out, "the report is lost") != NULL &&
                  strstr(out, "it is a symbolic link") != NULL, "%s", out);
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert_msg(S_ISLNK(st.st_mode), "the link was replaced");
    ck_assert_int_eq(link(victim, hard), 0);
    snprintf(re, sizeof re, "GPUMEM_REPORT=json:%s", hard);
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "info");
    ck_assert_msg(strstr(out, "the report is lost") != NULL &&
                  strstr(out, "other names (hard links)") != NULL, "%s", out);
    unlink(hard);
    if (geteuid() == 0) {
        ck_assert_int_eq(chown(victim, 65534, 65534), 0);
        snprintf(re, sizeof re, "GPUMEM_REPORT=json:%s", victim);
        RUN_OK(env, apicheck("gpa"), "--via", "gpa", "info");
        ck_assert_msg(strstr(out, "belongs to another user") != NULL, "%s",
                      out);
    }
    unlink(path);
    read_report(victim, rep, sizeof rep);
    ck_assert_str_eq(rep, "precious\n");
    ck_assert_int_eq(rmdir(dir), 0); /* nothing else left behind */
}
END_TEST

/* Lines of a report file, each checked to be one whole JSON object. */
static int report_lines(const char *text)
{
    int n = 0;
    for (const char *l = text; *l; n++) {
        const char *e = strchr(l, '\n');
        ck_assert_msg(e != NULL, "a report line without its end: %.2000s", l);
        ck_assert_msg(strncmp(l, "{\"pid\":", 7) == 0 &&
                      strncmp(e - 2, "]}", 2) == 0,
                      "not one report per line: %.*s",
                      (int)(e - l < 2000 ? e - l : 2000), l);
        l = e + 1;
    }
    return n;
}

/* Every process of a command appends its own report, one line each: the
 * first's refusal survives the second's report, in order. A file there
 * already, the user's own, is kept and made 0600. */
START_TEST(report_of_every_process_kept)
{
    static char rep[1 << 16];
    char path[128], re[160], cmd[1024];
    snprintf(path, sizeof path, "/tmp/gmt-repall-%d.json", (int)getpid());
    snprintf(re, sizeof re, "GPUMEM_REPORT=json:%s", path);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"pid\":1,\"earlier\":[]}\n", f);
    fclose(f);
    ck_assert_int_eq(chmod(path, 0644), 0);
    snprintf(cmd, sizeof cmd, "%s --via gpa try 2147483648; %s --via gpa try "
             "1048576", apicheck("gpa"), apicheck("gpa"));
    const char *env[] = { "GPUMEM_LIMIT=1G", "SIMCUDA_CONTEXT=100M", re,
                          NULL };
    RUN_OK(env, "/bin/sh", "-c", cmd);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0600);
    read_report(path, rep, sizeof rep);
    ck_assert_int_eq(report_lines(rep), 3);
    const char *a = strchr(rep, '\n') + 1, *b = strchr(a, '\n') + 1;
    ck_assert_uint_eq(json_num(a, "refused"), 1);
    ck_assert_uint_eq(json_num(b, "refused"), 0);
    ck_assert_uint_eq(json_num(b, "peak_bytes"), 101ull << 20);
}
END_TEST

/* Processes that end at once, all reporting to one path: no report lost,
 * none torn or interleaved with another. */
START_TEST(reports_of_concurrent_processes_do_not_interleave)
{
    static char rep[1 << 18];
    enum { N = 16 };
    char path[128], re[160], cmd[8192];
    snprintf(path, sizeof path, "/tmp/gmt-repconc-%d.json", (int)getpid());
    snprintf(re, sizeof re, "GPUMEM_REPORT=json:%s", path);
    unlink(path);
    size_t o = 0;
    for (int k = 1; k <= N; k++)
        o += (size_t)snprintf(cmd + o, sizeof cmd - o, "%s --via gpa try %d "
                              "& ", apicheck("gpa"), k << 20);
    snprintf(cmd + o, sizeof cmd - o, "wait");
    const char *env[] = { "GPUMEM_LIMIT=1G", "SIMCUDA_CONTEXT=100M", re,
                          NULL };
    RUN_OK(env, "/bin/sh", "-c", cmd);
    read_report(path, rep, sizeof rep);
    ck_assert_int_eq(report_lines(rep), N);
    for (int k = 1; k <= N; k++) {
        char key[64];
        snprintf(key, sizeof key, "\"peak_bytes\":%d,", (100 + k) << 20);
        const char *p = strstr(rep, key);
        ck_assert_msg(p != NULL && strstr(p + 1, key) == NULL,
                      "the report of %d MiB not there once:\n%.2000s", k, rep);
    }
}
END_TEST

/* json:/dev/stdout (or /dev/fd/2) writes to the process's own stream; no
 * file is created beside it and nothing replaces the link. */
START_TEST(report_to_the_own_stdout)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "GPUMEM_REPORT=json:/dev/stdout",
                          NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "info");
    ck_assert_msg(strstr(out, "\"limit_bytes\":1073741824") != NULL, "%s",
                  out);
    struct stat st;
    ck_assert_int_eq(lstat("/dev/stdout", &st), 0);
    ck_assert_msg(S_ISLNK(st.st_mode), "/dev/stdout is no longer a link");
    const char *env2[] = { "GPUMEM_LIMIT=1G", "GPUMEM_REPORT=json:/dev/fd/2",
                           NULL };
    RUN_OK(env2, apicheck("gpa"), "--via", "gpa", "info");
    ck_assert_msg(strstr(out, "\"limit_bytes\":1073741824") != NULL, "%s",
                  out);
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
    ck_assert_msg(strstr(out, "this process runs without GPUMEM_LIMIT: no "
                         "memory limit") != NULL, "%s", out);
    ck_assert_uint_eq(info_field("total "), 8ull << 30); /* no limit */
}
END_TEST

/* GPUMEM_LOG_LEVEL=error and quiet mute the load's warnings (an unknown
 * variable); its errors still print, whether the process exits or runs. */
START_TEST(log_level_mutes_load_warnings_not_errors)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "GPUMEM_FOO=1",
                          "GPUMEM_LOG_LEVEL=error", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "info");
    ck_assert_msg(strstr(out, "gpumem:") == NULL, "%s", out);
    const char *quiet[] = { "GPUMEM_LIMIT=4 gigs", "GPUMEM_FOO=1",
                            "GPUMEM_ON_BAD_CONFIG=warn",
                            "GPUMEM_LOG_LEVEL=quiet", NULL };
    RUN_OK(quiet, apicheck("gpa"), "--via", "gpa", "info");
    ck_assert_msg(strstr(out, "GPUMEM_LIMIT='4 gigs' is not a size") != NULL &&
                  strstr(out, "GPUMEM_FOO") == NULL, "%s", out);
    const char *exits[] = { "GPUMEM_LIMIT=4 gigs", "GPUMEM_FOO=1",
                            "GPUMEM_LOG_LEVEL=error", NULL };
    const char *argv[] = { apicheck("gpa"), "--via", "gpa", "info", NULL };
    ck_assert_int_eq(gm_run(exits, 1, argv, out, sizeof out), 2);
    ck_assert_msg(strstr(out, "GPUMEM_LIMIT='4 gigs' is not a size") != NULL &&
                  strstr(out, "GPUMEM_FOO") == NULL, "%s", out);
    const char *warn[] = { "GPUMEM_LIMIT=1G", "GPUMEM_FOO=1", NULL };
    RUN_OK(warn, apicheck("gpa"), "--via", "gpa", "info");
    ck_assert_msg(strstr(out, "unknown variable GPUMEM_FOO") != NULL, "%s",
                  out);
}
END_TEST

/* A set limit with a driver path that cannot be loaded: the program's
 * own driver must not run unlimited. */
START_TEST(unloadable_driver_with_limit_exits_2)
{
    const char *env[] = { "GPUMEM_CUDA_LIBRARY=/nonexistent/libcuda.so.1",
                          "GPUMEM_LIMIT=1G", "SIMCUDA_MEMORY=16G", NULL };
    const char *argv[] = { apicheck(vias[_i]), "--via", vias[_i], "try",
                           "8589934592", NULL };
    int rc = gm_run(env, 1, argv, out, sizeof out);
    ck_assert_msg(rc == 2, "exit %d:\n%s", rc, out);
    ck_assert_msg(strstr(out, "GPUMEM_CUDA_LIBRARY='/nonexistent/libcuda.so.1'")
                  != NULL, "%s", out);
    ck_assert_msg(strstr(out, "try 8589934592 rc 0") == NULL, "ran: %s", out);
}
END_TEST

/* A library that loads but is no driver (no cuInit) is refused like one
 * that cannot be loaded, never called through NULL slots. */
START_TEST(non_driver_library_with_limit_exits_2)
{
    const char *env[] = { "GPUMEM_CUDA_LIBRARY=/lib/x86_64-linux-gnu/libm.so.6",
                          "GPUMEM_LIMIT=1G", "SIMCUDA_MEMORY=16G", NULL };
    const char *argv[] = { apicheck(vias[_i]), "--via", vias[_i], "try",
                           "8589934592", NULL };
    int rc = gm_run(env, 1, argv, out, sizeof out);
    ck_assert_msg(rc == 2, "exit %d:\n%s", rc, out);
    ck_assert_msg(strstr(out, "is not a CUDA driver: it has no cuInit")
                  != NULL, "%s", out);
    ck_assert_msg(strstr(out, "try 8589934592 rc 0") == NULL, "ran: %s", out);
}
END_TEST

START_TEST(non_driver_library_without_limit_passes_through)
{
    const char *env[] = { "GPUMEM_CUDA_LIBRARY=/lib/x86_64-linux-gnu/libm.so.6",
                          "SIMCUDA_MEMORY=16G", NULL };
    RUN_OK(env, apicheck("dlsym"), "--via", "dlsym", "try", "8589934592");
    ck_assert_msg(strstr(out, "try 8589934592 rc 0\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "is not a CUDA driver") != NULL, "%s", out);
}
END_TEST

START_TEST(unloadable_driver_warn_keeps_limit)
{
    const char *env[] = { "GPUMEM_CUDA_LIBRARY=/nonexistent/libcuda.so.1",
                          "GPUMEM_LIMIT=1G", "GPUMEM_ON_BAD_CONFIG=warn",
                          "SIMCUDA_MEMORY=16G", NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "try", "8589934592",
           "268435456");
    ck_assert_msg(strstr(out, "try 8589934592 rc 2\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "try 268435456 rc 0\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "limits are enforced through the driver this "
                             "program loaded") != NULL, "%s", out);
}
END_TEST

START_TEST(unloadable_driver_without_limit_passes_through)
{
    const char *env[] = { "GPUMEM_CUDA_LIBRARY=/nonexistent/libcuda.so.1",
                          "SIMCUDA_MEMORY=16G", NULL };
    RUN_OK(env, apicheck("dlsym"), "--via", "dlsym", "try", "8589934592");
    ck_assert_msg(strstr(out, "try 8589934592 rc 0\n") != NULL, "%s", out);
}
END_TEST

/* A request the driver refuses was never held: it raises neither the
 * peak nor, in staged mode, the limit learned from the peak. */
START_TEST(driver_refusal_leaves_no_peak)
{
    static char rep[1 << 14];
    char path[128], re[160];
    snprintf(path, sizeof path, "/tmp/gmt-refpeak-%d.json", (int)getpid());
    snprintf(re, sizeof re, "GPUMEM_REPORT=json:%s", path);
    const char *env[] = { "SIMCUDA_MEMORY=16G", "SIMCUDA_CONTEXT=300M", re,
                          NULL };
    RUN_OK(env, apicheck(vias[_i]), "--via", vias[_i], "try", "34359738368",
           "268435456");
    ck_assert_msg(strstr(out, "try 34359738368 rc 2\n") != NULL, "%s", out);
    read_report(path, rep, sizeof rep);
    unlink(path);
    ck_assert_uint_eq(json_num(rep, "peak_bytes"), (300ull + 256) << 20);
}
END_TEST

/* GPUMEM_ON_OOM=warn lets a request past the limit, but one the driver
 * then refuses (200 GiB on a 16 GiB device, or a size that wraps the
 * count) leaves neither a peak nor a drift in `used`. */
START_TEST(warn_request_refused_by_the_driver_leaves_no_trace)
{
    static char rep[1 << 14];
    char path[128], re[160];
    snprintf(path, sizeof path, "/tmp/gmt-warnpeak-%d.json", (int)getpid());
    snprintf(re, sizeof re, "GPUMEM_REPORT=json:%s", path);
    const char *env[] = { "SIMCUDA_MEMORY=16G", "SIMCUDA_CONTEXT=300M",
                          "GPUMEM_LIMIT=1536M", "GPUMEM_ON_OOM=warn", re,
                          NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "try", "1073741824",
           "214748364800", "18446744073709551615", "info");
    ck_assert_msg(strstr(out, "try 1073741824 rc 0\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "try 214748364800 rc 2\n") != NULL, "%s", out);
    /* Nothing live: the whole limit but the context is free again. */
    ck_assert_uint_eq(info_field("free "), (1536ull - 300) << 20);
    read_report(path, rep, sizeof rep);
    unlink(path);
    ck_assert_uint_eq(json_num(rep, "peak_bytes"), (300ull << 20) + (1ull << 30));
}
END_TEST

START_TEST(driver_refusal_does_not_raise_staged_limit)
{
    const char *env[] = { "SIMCUDA_MEMORY=16G", "SIMCUDA_CONTEXT=300M",
                          "GPUMEM_MODE=staged", "GPUMEM_WARMUP=100ms",
                          "GPUMEM_HEADROOM=10%", NULL };
    RUN_OK(env, apicheck("gpa"), "--via", "gpa", "try", "34359738368",
           "268435456", "sleep:300", "1048576", "2147483648");
    /* Frozen at (300 + 256) MiB x 1.1, rounded: 2 GiB no longer fits. */
    ck_assert_msg(strstr(out, "try 1048576 rc 0\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "try 2147483648 rc 2\n") != NULL, "%s", out);
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
    tcase_add_loop_test(t, mapped_handle_stays_charged, 0, 3);
    tcase_add_loop_test(t, undone_pool_growth_is_in_the_peak, 0, 3);
    tcase_add_loop_test(t, every_api_refused, 0, 3);
    tcase_add_loop_test(t, mipmaps_charged_their_clamped_levels, 0, 3);
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
    tcase_add_loop_test(a, invalid_requests_get_the_drivers_answer, 0, 3);
    tcase_add_loop_test(a, static_mode_free_is_the_arena_room, 0, 3);
    tcase_add_loop_test(a, every_context_charged_until_its_end, 0, 3);
    tcase_add_loop_test(a, a_contexts_end_gives_back_its_memory, 0, 3);
    tcase_add_test(a, context_ends_race_a_living_thread);
    tcase_add_loop_test(a, static_arena_ends_with_its_context, 0, 3);
    tcase_add_loop_test(a, first_created_context_past_the_limit_refused, 0, 3);
    tcase_add_test(a, primary_retain_release_race);
    tcase_add_test(a, created_context_past_the_group_refused);
    tcase_add_test(a, created_context_past_the_group_refused_under_warn);
    tcase_add_test(a, percent_limit_resolves_against_physical);
    tcase_add_test(a, share_limit_uses_local_ranks);
    tcase_add_test(a, limit_above_physical_clamps);
    tcase_add_test(a, two_devices_two_limits);
    tcase_add_loop_test(a, async_charged_to_the_serving_device, 0, 3);
    tcase_add_test(a, fork_child_is_clean);
    tcase_add_loop_test(a, scribbled_header_is_not_trusted, 0, 3);
    tcase_add_loop_test(a, pools_charge_their_reserve, 0, 3);
    tcase_add_loop_test(a, pool_of_a_device_without_a_context, 0, 3);
    tcase_add_loop_test(a, repeated_pool_blocks_need_no_query, 0, 3);
    tcase_add_loop_test(a, pool_destroyed_with_live_blocks_stays_charged, 0, 3);
    tcase_add_test(a, pool_threads_no_drift);
    tcase_add_test(a, published_pool_reserve_ends_exact);
    tcase_add_test(a, idle_pool_memory_counts_in_the_group);
    suite_add_tcase(s, a);
    TCase *m = tcase_create("modes");
    tcase_set_timeout(m, 60);
    tcase_add_loop_test(m, mode_static, 0, 3);
    tcase_add_loop_test(m, static_free_async_returns_to_the_arena, 0, 3);
    tcase_add_loop_test(m, static_arena_full_spills, 0, 3);
    tcase_add_loop_test(m, static_arena_full_warns, 0, 3);
    tcase_add_test(m, static_arena_full_waits);
    tcase_add_test(m, mode_staged);
    tcase_add_test(m, oom_wait_release);
    tcase_add_test(m, oom_wait_timeout);
    tcase_add_test(m, oom_wait_longest_waits);
    tcase_add_test(m, oom_spill);
    tcase_add_test(m, oom_warn);
    suite_add_tcase(s, m);
    TCase *l = tcase_create("lifecycle");
    tcase_set_timeout(l, 60);
    tcase_add_test(l, cuda_in_a_constructor_is_counted);
    tcase_add_test(l, policy_command);
    tcase_add_test(l, exit_report_exact);
    tcase_add_test(l, report_never_follows_a_symlink);
    tcase_add_test(l, report_of_every_process_kept);
    tcase_add_test(l, reports_of_concurrent_processes_do_not_interleave);
    tcase_add_test(l, report_to_the_own_stdout);
    tcase_add_test(l, bad_config_exits_2);
    tcase_add_test(l, bad_config_warn_runs);
    tcase_add_test(l, log_level_mutes_load_warnings_not_errors);
    tcase_add_loop_test(l, unloadable_driver_with_limit_exits_2, 0, 3);
    tcase_add_loop_test(l, unloadable_driver_warn_keeps_limit, 0, 3);
    tcase_add_test(l, unloadable_driver_without_limit_passes_through);
    tcase_add_test(l, report_over_fsize_limit_is_lost_cleanly);
    tcase_add_loop_test(l, non_driver_library_with_limit_exits_2, 0, 3);
    tcase_add_test(l, non_driver_library_without_limit_passes_through);
    tcase_add_loop_test(l, driver_refusal_leaves_no_peak, 0, 3);
    tcase_add_test(l, driver_refusal_does_not_raise_staged_limit);
    tcase_add_test(l, warn_request_refused_by_the_driver_leaves_no_trace);
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
