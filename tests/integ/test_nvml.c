/*
 * tests/integ/test_nvml.c — the NVML view over the simulated driver and
 * the simulated NVML (build/sim/libnvidia-ml.so.1), NVML reached by plain
 * symbol binding, by dlsym on its handle, and next to CUDA reached
 * through cuGetProcAddress: NVML's figures equal cuMemGetInfo's under a
 * limit at every step, the process list shows the charge (in static mode
 * less the arena's free room, so it is NVML's used), reordered
 * devices map limits by UUID, an NVML-only process pays nothing, NVML's
 * own error codes, GPUMEM_NVML_VIEW=0, and the shim's context
 * measurement through NVML against its total - free fallback.
 */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gm_spawn.h"

static char out[1 << 16];
static char out2[1 << 16];

static const char *const vias[] = { "link", "dlsym", "gpa" };

static const char *prog(const char *via)
{
    return strcmp(via, "link") == 0 ? gm_bpath("tests/progs/direct_nvmlview")
                                    : gm_bpath("tests/progs/nvmlview");
}

#define RUN(buf, preload, env, ...)                                      \
    do {                                                                 \
        const char *argv_[] = { __VA_ARGS__, NULL };                     \
        int rc_ = gm_run(env, preload, argv_, buf, sizeof buf);          \
        ck_assert_msg(rc_ == 0, "exit %d:\n%s", rc_, buf);               \
    } while (0)

#define MIB (1ull << 20)

static void has(const char *buf, const char *line)
{
    ck_assert_msg(strstr(buf, line) != NULL, "no '%s' in:\n%s", line, buf);
}

/* A limit below the device: 9 blocks of 100 MiB fit under 1 GiB with a
 * 64 MiB context, the 10th does not; every step compared. Every third
 * block is managed memory, which gpumem charges and the simulated device
 * does not count: the process's own entry must show gpumem's charge. */
START_TEST(memory_equals_cuda_at_every_step)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "SIMCUDA_CONTEXT=64M", NULL };
    RUN(out, 1, env, prog(vias[_i]), "--via", vias[_i], "loop", "12", "104857600");
    has(out, "allocated 9\n");
    has(out, "steps 19 equal\n");
    char want[128];
    snprintf(want, sizeof want, "procs v1=%llu v2=%llu v3=%llu\n",
             64 * MIB + 900 * MIB, 64 * MIB + 900 * MIB, 64 * MIB + 900 * MIB);
    has(out, want);
    snprintf(want, sizeof want, "procs after frees v3=%llu\n", 64 * MIB);
    has(out, want);
}
END_TEST

/* A limit above the device: total is the physical size, free the
 * device's. */
START_TEST(limit_above_physical_shows_physical)
{
    const char *env[] = { "GPUMEM_LIMIT=4G", "SIMCUDA_MEMORY=512M",
                          "SIMCUDA_CONTEXT=64M", NULL };
    RUN(out, 1, env, prog(vias[_i]), "--via", vias[_i], "loop", "6", "104857600");
    /* 64 MiB + 4 plain blocks fit in 512 MiB; the 2 managed ones take no
     * device memory on the simulator. Free is the device's then. */
    has(out, "allocated 6\n");
    has(out, "steps 13 equal\n");
}
END_TEST

/* Static and staged modes: NVML's free follows cuMemGetInfo's (static:
 * the arena's room, the arena charged whole), and in static mode the
 * process's own entry is its used: the context and the arena's pieces
 * (2 of 100 MiB; the managed third does not fit beside the arena), not
 * the whole arena (it showed 2 GiB with NVML's used at 264 MiB). */
START_TEST(modes_agree_with_cuda)
{
    const char *st[] = { "GPUMEM_LIMIT=2G", "GPUMEM_MODE=static", "SIMCUDA_CONTEXT=64M", NULL };
    RUN(out, 1, st, prog("dlsym"), "--via", "dlsym", "loop", "12", "104857600");
    has(out, " equal\n");
    has(out, "allocated 2\n");
    char want[160];
    const unsigned long long held = 64 * MIB + 200 * MIB;
    snprintf(want, sizeof want, "procs v1=%llu v2=%llu v3=%llu\nused %llu\n",
             held, held, held, held);
    has(out, want);
    snprintf(want, sizeof want,
             "procs after frees v3=%llu\nused after frees %llu\n", 64 * MIB,
             64 * MIB);
    has(out, want);
    const char *sg[] = { "GPUMEM_LIMIT=2G", "GPUMEM_MODE=staged", "SIMCUDA_CONTEXT=64M", NULL };
    RUN(out, 1, sg, prog("dlsym"), "--via", "dlsym", "loop", "12", "104857600");
    has(out, "steps 25 equal\n");
}
END_TEST

/* Without a limit NVML passes through: still equal to CUDA (which passes
 * through too), and the process entry is the simulator's own figure
 * (managed blocks not in it). */
START_TEST(no_limit_passes_through)
{
    const char *env[] = { "SIMCUDA_CONTEXT=64M", NULL };
    RUN(out, 1, env, prog(vias[_i]), "--via", vias[_i], "loop", "9", "104857600");
    has(out, "steps 19 equal\n");
    char want[128];
    snprintf(want, sizeof want, "procs v1=%llu v2=%llu v3=%llu\n",
             64 * MIB + 600 * MIB, 64 * MIB + 600 * MIB, 64 * MIB + 600 * MIB);
    has(out, want);
}
END_TEST

/* "cuda N UUID total=T" / "nvml N UUID total=T" lines: the NVML total of
 * the device with CUDA ordinal `ord`'s UUID. */
static unsigned long long nvml_total_of(const char *buf, int ord)
{
    char key[32], uuid[96];
    snprintf(key, sizeof key, "cuda %d ", ord);
    const char *p = strstr(buf, key);
    ck_assert_msg(p != NULL, "no '%s' in:\n%s", key, buf);
    ck_assert_int_eq(sscanf(p + strlen(key), "%95s", uuid), 1);
    for (const char *q = strstr(buf, "nvml "); q; q = strstr(q + 1, "nvml ")) {
        unsigned idx;
        char u[96];
        unsigned long long t;
        if (sscanf(q, "nvml %u %95s total=%llu", &idx, u, &t) == 3 &&
            strcmp(u, uuid) == 0)
            return t;
    }
    ck_abort_msg("no NVML device with %s in:\n%s", uuid, buf);
    return 0;
}

/* Two devices shown in reverse order with a limit each: every limit
 * lands on its physical device's NVML entry. */
START_TEST(reordered_devices_map_limits_by_uuid)
{
    const char *env[] = { "SIMCUDA_DEVICES=2", "CUDA_VISIBLE_DEVICES=1,0",
                          "GPUMEM_LIMIT_0=1G", "GPUMEM_LIMIT_1=2G", NULL };
    RUN(out, 1, env, prog(vias[_i]), "--via", vias[_i], "map");
    has(out, "cuda 0 ");
    ck_assert_uint_eq(nvml_total_of(out, 0), 1ull << 30);
    ck_assert_uint_eq(nvml_total_of(out, 1), 2ull << 30);
    /* NVML index 0 is physical device 0, CUDA ordinal 1: 2 GiB. */
    unsigned idx;
    char u[96];
    unsigned long long t;
    ck_assert_int_eq(sscanf(strstr(out, "nvml 0 "), "nvml %u %95s total=%llu", &idx, u, &t), 3);
    ck_assert_uint_eq(t, 2ull << 30);

    /* A device CUDA does not see keeps its physical figures. */
    const char *hidden[] = { "SIMCUDA_DEVICES=2", "CUDA_VISIBLE_DEVICES=1",
                             "GPUMEM_LIMIT=1G", NULL };
    RUN(out, 1, hidden, prog(vias[_i]), "--via", vias[_i], "map");
    ck_assert_uint_eq(nvml_total_of(out, 0), 1ull << 30);
    ck_assert_ptr_nonnull(strstr(strstr(out, "nvml 0 "), "total=85899345920"));
}
END_TEST

/* GPUMEM_NVML_VIEW=0: NVML shows the physical device, CUDA the limit. */
START_TEST(view_off_shows_physical)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", "GPUMEM_NVML_VIEW=0", NULL };
    RUN(out, 1, env, prog("dlsym"), "--via", "dlsym", "map");
    has(out, "cuda 0 ");
    ck_assert_uint_eq(nvml_total_of(out, 0), 80ull << 30);
    has(out, "total=1073741824\n");
}
END_TEST

/* Segments ("PREFIX.pid") and group files ("PREFIX_name") in /dev/shm. */
static int count_prefix(const char *prefix)
{
    DIR *d = opendir("/dev/shm");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0 &&
             (e->d_name[strlen(prefix)] == '.' || e->d_name[strlen(prefix)] == '_');
    if (d)
        closedir(d);
    return n;
}

/* A process that only uses NVML, without a limit: the same output with
 * and without the shim, no driver loaded, one thread, no segment (kept
 * segments would stay behind: GPUMEM_KEEP=1). */
START_TEST(nvml_only_costs_nothing)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "gmnv%d", (int)getpid());
    char pv[96];
    snprintf(pv, sizeof pv, "GPUMEM_SHM_PREFIX=%s", prefix);
    const char *env[] = { "SIMCUDA_DEVICES=2", "GPUMEM_KEEP=1", pv, NULL };
    RUN(out, 0, env, prog(vias[_i]), "--via", vias[_i], "info");
    RUN(out2, 1, env, prog(vias[_i]), "--via", vias[_i], "info");
    ck_assert_str_eq(out, out2);
    has(out2, "libcuda not loaded\n");
    has(out2, "threads 1\n");
    ck_assert_int_eq(count_prefix(prefix), 0);
}
END_TEST

/* With limits in its own environment the NVML-only process sees them,
 * mapped through CUDA_VISIBLE_DEVICES, nothing charged, and still loads
 * no driver and makes no segment, group file or thread (a group would
 * start a reaper thread at initialisation). A hidden device passes
 * through. */
START_TEST(nvml_only_with_limits_sees_them)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "gmnv%d", (int)getpid());
    char pv[96];
    snprintf(pv, sizeof pv, "GPUMEM_SHM_PREFIX=%s", prefix);
    const char *env[] = { "SIMCUDA_DEVICES=2", "CUDA_VISIBLE_DEVICES=1,0",
                          "GPUMEM_LIMIT_0=1G", "GPUMEM_LIMIT_1=2G", "GPUMEM_KEEP=1",
                          "GPUMEM_GROUP=nv", "GPUMEM_GROUP_LIMIT=4G", pv, NULL };
    RUN(out, 1, env, prog(vias[_i]), "--via", vias[_i], "info");
    has(out, "total=2147483648 free=2147483648 used=0 v2 total=2147483648 "
             "free=2147483648 used=0 reserved=0 procs=0");
    has(out, "total=1073741824 free=1073741824 used=0 v2 total=1073741824 "
             "free=1073741824 used=0 reserved=0 procs=0");
    ck_assert_ptr_nonnull(strstr(out, "nvml 0 "));
    ck_assert_ptr_nonnull(strstr(strstr(out, "nvml 0 "), "total=2147483648"));
    has(out, "libcuda not loaded\n");
    has(out, "threads 1\n");
    ck_assert_int_eq(count_prefix(prefix), 0);

    const char *hidden[] = { "SIMCUDA_DEVICES=2", "CUDA_VISIBLE_DEVICES=1",
                             "GPUMEM_LIMIT=1G", NULL };
    RUN(out, 1, hidden, prog(vias[_i]), "--via", vias[_i], "info");
    ck_assert_ptr_nonnull(strstr(strstr(out, "nvml 0 "), "total=85899345920"));
    ck_assert_ptr_nonnull(strstr(strstr(out, "nvml 1 "), "total=1073741824"));
}
END_TEST

/* Calls before cuInit resolve nothing for good: NVML shows the limit
 * after a CUDA call the driver refused as not initialised, a primary
 * retain before cuInit gets the driver's answer (3), and the device's
 * limit resolves once the driver is up (50% of 80 GiB on both sides). */
START_TEST(calls_before_cuinit_resolve_nothing)
{
    const char *env[] = { "GPUMEM_LIMIT=50%", NULL };
    RUN(out, 1, env, prog(vias[_i]), "--via", vias[_i], "early");
    has(out, "before cuInit: info rc 3 nvml total=42949672960\n");
    has(out, "retain before cuInit rc 3\n");
    has(out, "after cuInit: cuda total=42949672960 nvml total=42949672960\n");
}
END_TEST

/* NULL outputs, an unknown handle, a NULL count, a wrong struct version:
 * NVML's own codes, the same with the shim and a limit as without. */
START_TEST(errors_are_nvmls_own)
{
    const char *env[] = { "GPUMEM_LIMIT=1G", NULL };
    RUN(out, 1, env, prog(vias[_i]), "--via", vias[_i], "errors");
    RUN(out2, 0, env, prog(vias[_i]), "--via", vias[_i], "errors");
    ck_assert_str_eq(out, out2);
    has(out, "mem NULL=2\nmem2 NULL=2\nmem bogus=2\nmem2 bogus=2\n"
             "mem2 version0=25\nprocs NULL count=2\nprocs bogus=2\n"
             "procs count0=7 n=1\ngraphics=0 n=0\nmps=0 n=0\n");
}
END_TEST

/* ---- context measurement ------------------------------------------------ */

static pid_t holder_pid;
static int holder_in = -1, holder_out = -1;

/* Another simulated process holding `size` bytes on the device; with a
 * limit (not NULL), under the shim with that GPUMEM_LIMIT. */
static void holder_start_as(const char *size, const char *limit)
{
    int in[2], o[2];
    ck_assert_int_eq(pipe(in), 0);
    ck_assert_int_eq(pipe(o), 0);
    holder_pid = fork();
    ck_assert_int_ge(holder_pid, 0);
    if (holder_pid == 0) {
        dup2(in[0], 0);
        dup2(o[1], 1);
        close(in[1]);
        close(o[0]);
        char abs[2048], sim[2200];
        if (realpath(gm_build_dir(), abs) == NULL)
            _exit(126);
        snprintf(sim, sizeof sim, "%s/sim", abs);
        setenv("LD_LIBRARY_PATH", sim, 1);
        unsetenv("LD_PRELOAD");
        unsetenv("SIMCUDA_CONTEXT");
        if (limit != NULL) {
            char so[2300];
            snprintf(so, sizeof so, "%s/libgpumem.so", abs);
            setenv("LD_PRELOAD", so, 1);
            setenv("GPUMEM_LIMIT", limit, 1);
        }
        const char *p = gm_bpath("tests/progs/nvmlview");
        execl(p, p, "hold", size, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(o[1]);
    holder_in = in[1];
    /* The read end stays open until the holder is gone: its line may come
     * in more than one write, and a write to a closed pipe would kill it
     * (SIGPIPE) while it should hold. */
    holder_out = o[0];
    char line[64] = { 0 };
    ssize_t r = read(o[0], line, sizeof line - 1);
    ck_assert_msg(r > 0 && strncmp(line, "holding", 7) == 0, "holder: '%s'", line);
}

static void holder_start(const char *size)
{
    holder_start_as(size, NULL);
}

static void holder_stop(void)
{
    close(holder_in);
    int st;
    waitpid(holder_pid, &st, 0);
    close(holder_out);
    /* A holder that died (a signal) before it was told to go would have
     * held nothing for part of the test. */
    ck_assert_msg(WIFEXITED(st), "the holder died: status 0x%x", st);
}

static unsigned long long field(const char *buf, const char *key)
{
    const char *p = strstr(buf, key);
    ck_assert_msg(p != NULL, "no '%s' in:\n%s", key, buf);
    return strtoull(p + strlen(key), NULL, 10);
}

/* Another process holds 1 GiB and its own context (the simulator's
 * default 300 MiB) on the device. Through NVML the shim charges exactly
 * its context (the process's own entry); the fallback (total - free
 * through the new context, NVML not found) also counts the neighbour's
 * 1.3 GiB. */
START_TEST(context_measured_through_nvml_not_the_fallback)
{
    char dir[] = "/tmp/gmnvml.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char abs[2048], link[2300], from[2300];
    ck_assert_ptr_nonnull(realpath(gm_build_dir(), abs));
    snprintf(from, sizeof from, "%s/sim/libcuda.so.1", abs);
    snprintf(link, sizeof link, "%s/libcuda.so.1", dir);
    ck_assert_int_eq(symlink(from, link), 0);
    char ld[2400];
    snprintf(ld, sizeof ld, "LD_LIBRARY_PATH=%s", dir);

    holder_start("1073741824");
    const char *nvml[] = { "GPUMEM_LIMIT=4G", "SIMCUDA_CONTEXT=200M", NULL };
    const char *fallback[] = { "GPUMEM_LIMIT=4G", "SIMCUDA_CONTEXT=200M", ld, NULL };
    const char *api = gm_bpath("tests/progs/apicheck");
    const char *argv[] = { api, "--via", "dlsym", "info", NULL };
    int rc1 = gm_run(nvml, 1, argv, out, sizeof out);
    int rc2 = gm_run(fallback, 1, argv, out2, sizeof out2);
    holder_stop();
    unlink(link);
    rmdir(dir);
    ck_assert_msg(rc1 == 0 && rc2 == 0, "%s\n%s", out, out2);
    ck_assert_uint_eq(field(out, "total "), 4ull << 30);
    ck_assert_uint_eq(field(out, "free "), (4ull << 30) - 200 * MIB);
    ck_assert_uint_eq(field(out2, "free "),
                      (4ull << 30) - 200 * MIB - (1ull << 30) - 300 * MIB);
}
END_TEST

/* An NVML-only process under a limit (nvidia-smi in a limited job) shows
 * as used what the job's processes are charged on the card: here one
 * process under the shim holding 1 GiB and its context (300 MiB), the
 * figure `gpumem ps` shows for it. Without the job's process, nothing. */
START_TEST(nvml_only_shows_the_jobs_charge)
{
    holder_start_as("1073741824", "4G");
    const char *env[] = { "GPUMEM_LIMIT=4G", NULL };
    RUN(out, 1, env, prog(vias[_i]), "--via", vias[_i], "info");
    const char *ps[] = { gm_bpath("gpumem"), "ps", NULL };
    static char pso[8192];
    int rc = gm_run(NULL, 0, ps, pso, sizeof pso);
    holder_stop();
    ck_assert_int_eq(rc, 0);
    const unsigned long long used = (1ull << 30) + 300 * MIB;
    char want[256];
    snprintf(want, sizeof want, "total=%llu free=%llu used=%llu v2 total=%llu "
             "free=%llu used=%llu reserved=0", 4ull << 30, (4ull << 30) - used,
             used, 4ull << 30, (4ull << 30) - used, used);
    has(out, want);
    has(pso, "1.3G");
    RUN(out, 1, env, prog(vias[_i]), "--via", vias[_i], "info");
    has(out, "total=4294967296 free=4294967296 used=0 ");
}
END_TEST

/* An NVML-only process of a group (nvidia-smi in a job whose ranks share
 * a group budget) sees the group's ceiling without joining it: the limit
 * the group's segment holds for the card (2 GiB, registered by the CUDA
 * process; the watcher's own GPUMEM_GROUP_LIMIT=3G is not what applies)
 * and, as used, the group's charge there (1 GiB and the 300 MiB context).
 * With a group limit and no GPUMEM_LIMIT of its own the same. Without a
 * segment (the member gone), its own group limit, resolved on the card. */
START_TEST(nvml_only_sees_the_groups_ceiling)
{
    setenv("GPUMEM_GROUP", "nvwatch", 1);
    setenv("GPUMEM_GROUP_LIMIT", "2G", 1);
    holder_start_as("1073741824", "4G");
    unsetenv("GPUMEM_GROUP");
    unsetenv("GPUMEM_GROUP_LIMIT");
    const char *env[] = { "GPUMEM_LIMIT=4G", "GPUMEM_GROUP=nvwatch",
                          "GPUMEM_GROUP_LIMIT=3G", NULL };
    RUN(out, 1, env, prog(vias[_i]), "--via", vias[_i], "info");
    const char *alone[] = { "GPUMEM_GROUP=nvwatch", "GPUMEM_GROUP_LIMIT=3G",
                            NULL };
    RUN(out2, 1, alone, prog(vias[_i]), "--via", vias[_i], "info");
    holder_stop();
    const unsigned long long used = (1ull << 30) + 300 * MIB;
    char want[256];
    snprintf(want, sizeof want, "total=%llu free=%llu used=%llu ", 2ull << 30,
             (2ull << 30) - used, used);
    has(out, want);
    has(out2, want);
    const char *gone[] = { "GPUMEM_GROUP=nvwatch", "GPUMEM_GROUP_LIMIT=1G",
                           NULL };
    RUN(out, 1, gone, prog(vias[_i]), "--via", vias[_i], "info");
    has(out, "total=1073741824 free=1073741824 used=0 ");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nvml");
    TCase *t = tcase_create("view");
    tcase_set_timeout(t, 30);
    tcase_add_loop_test(t, memory_equals_cuda_at_every_step, 0, 3);
    tcase_add_loop_test(t, limit_above_physical_shows_physical, 0, 3);
    tcase_add_loop_test(t, no_limit_passes_through, 0, 3);
    tcase_add_test(t, modes_agree_with_cuda);
    tcase_add_loop_test(t, reordered_devices_map_limits_by_uuid, 0, 3);
    tcase_add_test(t, view_off_shows_physical);
    tcase_add_loop_test(t, nvml_only_costs_nothing, 0, 2);
    tcase_add_loop_test(t, nvml_only_with_limits_sees_them, 0, 2);
    tcase_add_loop_test(t, errors_are_nvmls_own, 0, 3);
    tcase_add_loop_test(t, calls_before_cuinit_resolve_nothing, 0, 3);
    tcase_add_test(t, context_measured_through_nvml_not_the_fallback);
    tcase_add_loop_test(t, nvml_only_shows_the_jobs_charge, 0, 2);
    tcase_add_loop_test(t, nvml_only_sees_the_groups_ceiling, 0, 2);
    suite_add_tcase(s, t);
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
