/*
 * tests/unit/test_admin.c — Check suite for the admin policy file
 * (policy/admin.c reading, policy/rules.c lines and rules) and HAMi-core's
 * variables (policy/hami.c, gm_parse_hami_size_ex): defaults and their
 * source, every ceiling against the environment (tighten, never loosen),
 * bad lines with PATH:LINE, the trust checks on real files (as root), the
 * HAMi-core forms and their mapping, CUDA_DISABLE_CONTROL, the grant's
 * effective value in gpumem policy's text and JSON.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/parse.h"
#include "policy/policy.h"

#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)

static struct gm_policy p;
static struct gm_diag d;
static struct gm_admin_file af;
static int rc;

static void set_admin(const char *text)
{
    memset(&af, 0, sizeof af);
    af.state = GM_ADMIN_READ;
    snprintf(af.path, sizeof af.path, "/etc/gpumem/policy");
    snprintf(af.text, sizeof af.text, "%s", text);
    af.len = strlen(af.text);
}

/* ALOAD("admin text", "ENV=1", ...): load with that admin file. */
#define ALOAD(text, ...)                                            \
    do {                                                            \
        char *env_[] = { __VA_ARGS__, NULL };                       \
        set_admin(text);                                            \
        rc = gm_policy_load_ex(&p, env_, &af, &d);                  \
    } while (0)

static unsigned count_lines(const char *s)
{
    unsigned n = 0;

    for (; *s; s++)
        n += *s == '\n';
    return n;
}

#define HAS(s) ck_assert_msg(strstr(d.text, s) != NULL, "no \"%s\" in:\n%s", \
                             s, d.text)

/* ---- defaults ------------------------------------------------------------ */

START_TEST(defaults_from_file)
{
    ALOAD("# the node\n\nGPUMEM_MODE=staged\n  GPUMEM_WARMUP = 30s  # short\n"
          "GPUMEM_LIMIT_1=2G\r\n", "PATH=/bin");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(d.len, 0);
    ck_assert_int_eq(p.mode, GM_MODE_STAGED);
    ck_assert_int_eq(p.src[GM_F_MODE], GM_SRC_ADMIN);
    ck_assert_uint_eq(p.warmup_ns, 30000000000ull);
    ck_assert(p.dev_limit_set[1]);
    ck_assert_uint_eq(p.dev_limit[1].bytes, 2 * GiB);
    ck_assert_int_eq(p.src[GM_F_LIMIT_N], GM_SRC_ADMIN);
    ck_assert_int_eq(p.src[GM_F_LIMIT], GM_SRC_DEFAULT);
    /* The environment overrides a default. */
    ALOAD("GPUMEM_MODE=staged\n", "GPUMEM_MODE=grow");
    ck_assert_int_eq(p.mode, GM_MODE_GROW);
    ck_assert_int_eq(p.src[GM_F_MODE], GM_SRC_ENV);
    /* A refused env value keeps the admin default, not the built-in. */
    ALOAD("GPUMEM_MODE=staged\nGPUMEM_ON_BAD_CONFIG=warn\n",
          "GPUMEM_MODE=fast");
    ck_assert_int_eq(rc, -1);
    ck_assert(!p.admin_fatal);
    ck_assert_int_eq(p.mode, GM_MODE_STAGED);
    ck_assert_int_eq(p.src[GM_F_MODE], GM_SRC_ADMIN);
    ck_assert_int_eq(p.on_bad_config, GM_BAD_WARN);
}
END_TEST

/* The admin file's GPUMEM_LIMIT_<N> is a default like its GPUMEM_LIMIT:
 * a job's own GPUMEM_LIMIT is its limit on every device, a job's own
 * GPUMEM_LIMIT_<N> still wins on its device, the ceiling still holds. */
START_TEST(device_default_yields_to_env)
{
    ALOAD("GPUMEM_LIMIT_0=8G\nGPUMEM_LIMIT_2=1G\n", "GPUMEM_LIMIT=4G");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(d.len, 0);
    ck_assert(!p.dev_limit_set[0] && !p.dev_limit_set[2]);
    ck_assert_int_eq(p.src[GM_F_LIMIT_N], GM_SRC_DEFAULT);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 4 * GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 2, 80 * GiB), 4 * GiB);
    ALOAD("GPUMEM_LIMIT_0=8G\n", "GPUMEM_LIMIT=none");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 0);
    ALOAD("GPUMEM_LIMIT_0=8G\n", "GPUMEM_LIMIT=4G", "GPUMEM_LIMIT_1=2G");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 4 * GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 1, 80 * GiB), 2 * GiB);
    ck_assert_int_eq(p.src[GM_F_LIMIT_N], GM_SRC_ENV);
    ALOAD("GPUMEM_LIMIT_0=8G\nGPUMEM_MAX_LIMIT=2G\n", "GPUMEM_LIMIT=4G");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 2 * GiB);
    /* Without a GPUMEM_LIMIT of the job's, the defaults stand ... */
    ALOAD("GPUMEM_LIMIT_0=8G\n", "GPUMEM_LIMIT_1=2G");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 8 * GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 3, 80 * GiB), 0);
    /* ... and a refused one falls back to them (GPUMEM_ON_BAD_CONFIG). */
    ALOAD("GPUMEM_LIMIT_0=8G\nGPUMEM_LIMIT=16G\n", "GPUMEM_LIMIT=4G5",
          "GPUMEM_ON_BAD_CONFIG=warn");
    ck_assert_int_eq(rc, -1);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 8 * GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 1, 80 * GiB), 16 * GiB);
}
END_TEST

START_TEST(no_file)
{
    memset(&af, 0, sizeof af);
    af.state = GM_ADMIN_ABSENT;
    snprintf(af.path, sizeof af.path, "/etc/gpumem/policy");
    char *env[] = { "GPUMEM_LIMIT=none", NULL };
    rc = gm_policy_load_ex(&p, env, &af, &d);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 0);
    ck_assert_int_eq(p.admin_state, GM_ADMIN_ABSENT);
}
END_TEST

START_TEST(refused_file_is_fatal)
{
    memset(&af, 0, sizeof af);
    af.state = GM_ADMIN_REFUSED;
    snprintf(af.path, sizeof af.path, "/etc/gpumem/policy");
    snprintf(af.why, sizeof af.why, "/etc/gpumem/policy is owned by uid "
             "1000, not root");
    char *env[] = { "GPUMEM_ON_BAD_CONFIG=warn", NULL };
    rc = gm_policy_load_ex(&p, env, &af, &d);
    ck_assert_int_eq(rc, -1);
    ck_assert(p.admin_fatal);
    HAS("the admin policy file /etc/gpumem/policy is not trusted: "
        "/etc/gpumem/policy is owned by uid 1000, not root");
    HAS("chown root:root");
}
END_TEST

/* ---- bad lines ----------------------------------------------------------- */

START_TEST(bad_lines)
{
    ALOAD("GPUMEM_MODE=grow\nGPUMEM_LIMIT=4 gigs\n", "PATH=/bin");
    ck_assert_int_eq(rc, -1);
    ck_assert(p.admin_fatal);
    HAS("gpumem: /etc/gpumem/policy:2: GPUMEM_LIMIT='4 gigs' is not a size; "
        "use bytes");
    ck_assert_uint_eq(count_lines(d.text), 1);

    ALOAD("GPUMEM_MAX_LIMT=4G\n", "PATH=/bin");
    ck_assert(p.admin_fatal);
    HAS("gpumem: /etc/gpumem/policy:1: unknown name GPUMEM_MAX_LIMT (did you "
        "mean GPUMEM_MAX_LIMIT?); use NAME=VALUE lines");

    ALOAD("# ok\nlimit 4G\n", "PATH=/bin");
    ck_assert(p.admin_fatal);
    HAS("gpumem: /etc/gpumem/policy:2: 'limit 4G' is not a NAME=VALUE line; "
        "use NAME=VALUE lines");

    ALOAD("GPUMEM_MAX_LIMIT=4G\nGPUMEM_MAX_LIMIT=8G\n", "PATH=/bin");
    ck_assert(p.admin_fatal);
    HAS("gpumem: /etc/gpumem/policy:2: GPUMEM_MAX_LIMIT is set twice (first "
        "at line 1); keep one line");

    ALOAD("# c\n=4G\n", "PATH=/bin");
    ck_assert(p.admin_fatal);
    HAS("gpumem: /etc/gpumem/policy:2: a line has no name before '='; use "
        "NAME=VALUE lines");
    ALOAD("GPUMEM_LIMIT=\n", "PATH=/bin");
    ck_assert(p.admin_fatal);
    HAS("policy:1: GPUMEM_LIMIT='' is empty; use bytes");
    /* Trailing comments, CRLF, blanks: the value is what is left. */
    ALOAD("GPUMEM_MAX_LIMIT = 4G # c # d\r\n\t# x\n", "PATH=/bin");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(p.admin.max_limit.bytes, 4 * GiB);
    ck_assert_uint_eq(p.admin.line[GM_R_MAX_LIMIT], 1);

    ALOAD("GPUMEM_FORCE_TELEMETRY=yes\n", "PATH=/bin");
    ck_assert(p.admin_fatal);
    HAS(":1: GPUMEM_FORCE_TELEMETRY='yes' is not 0 or 1; use 0 or 1");

    /* An error in the environment is not the admin's. */
    ALOAD("GPUMEM_MAX_LIMIT=4G\n", "GPUMEM_LIMIT=4 gigs");
    ck_assert_int_eq(rc, -1);
    ck_assert(!p.admin_fatal);
    ck_assert(strstr(d.text, "policy:") == NULL);
}
END_TEST

START_TEST(env_cannot_set_rules)
{
    ALOAD("GPUMEM_MAX_LIMIT=4G\n", "GPUMEM_MAX_LIMIT=1T",
          "GPUMEM_ALLOW_DISABLE=1");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(p.admin.max_limit.bytes, 4 * GiB);
    ck_assert(!p.admin.allow_disable);
    HAS("gpumem: GPUMEM_MAX_LIMIT is an admin setting, read only from the "
        "admin policy file");
    HAS("gpumem: GPUMEM_ALLOW_DISABLE is an admin setting");
}
END_TEST

/* ---- the ceiling --------------------------------------------------------- */

START_TEST(ceiling_none_gets_ceiling)
{
    ALOAD("GPUMEM_MAX_LIMIT=40G\n", "GPUMEM_LIMIT=none");
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(p.limit.kind, GM_LIMIT_BYTES);
    ck_assert_uint_eq(p.limit.bytes, 40 * GiB);
    ck_assert_int_eq(p.src[GM_F_LIMIT], GM_SRC_ADMIN);
    ck_assert(p.clamped[GM_F_LIMIT]);
    ck_assert_str_eq(p.asked[GM_F_LIMIT], "none");
    ck_assert_uint_eq(d.warnings, 1);
    ck_assert_uint_eq(count_lines(d.text), 1);
    HAS("gpumem: GPUMEM_LIMIT='none' is above the admin ceiling "
        "GPUMEM_MAX_LIMIT (/etc/gpumem/policy:1); the limit is 40.0 GiB");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 3, 80 * GiB), 40 * GiB);
}
END_TEST

START_TEST(ceiling_env_unset)
{
    /* A job that unsets every GPUMEM_* variable. */
    ALOAD("GPUMEM_MAX_LIMIT=40G\n", "PATH=/bin");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(d.len, 0);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 40 * GiB);
    ck_assert(gm_policy_enforces(&p));
    /* ... also with an empty environment. */
    set_admin("GPUMEM_MAX_LIMIT=40G\n");
    rc = gm_policy_load_ex(&p, NULL, &af, &d);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 40 * GiB);
}
END_TEST

START_TEST(ceiling_tighten)
{
    ALOAD("GPUMEM_MAX_LIMIT=40G\n", "GPUMEM_LIMIT=4G");
    ck_assert_uint_eq(d.len, 0);
    ck_assert_uint_eq(p.limit.bytes, 4 * GiB);
    ck_assert_int_eq(p.src[GM_F_LIMIT], GM_SRC_ENV);
    ck_assert(!p.clamped[GM_F_LIMIT]);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 4 * GiB);

    ALOAD("GPUMEM_MAX_LIMIT=40G\n", "GPUMEM_LIMIT=50G");
    ck_assert_uint_eq(p.limit.bytes, 40 * GiB);
    HAS("GPUMEM_LIMIT='50G' is above the admin ceiling");

    ALOAD("GPUMEM_MAX_LIMIT=50%\n", "GPUMEM_LIMIT=80%");
    ck_assert_int_eq(p.limit.kind, GM_LIMIT_PERCENT);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 40 * GiB);
    HAS("GPUMEM_LIMIT='80%' is above the admin ceiling");

    ALOAD("GPUMEM_MAX_LIMIT=40G\n", "GPUMEM_LIMIT_2=100G", "GPUMEM_LIMIT=1G");
    ck_assert_uint_eq(p.dev_limit[2].bytes, 40 * GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 2, 80 * GiB), 40 * GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 1 * GiB);
    HAS("GPUMEM_LIMIT_2='100G' is above the admin ceiling");
}
END_TEST

START_TEST(ceiling_other_kind)
{
    bool clamped = false;

    /* 50% of an unknown device against 40G: decided per device. */
    ALOAD("GPUMEM_MAX_LIMIT=40G\n", "GPUMEM_LIMIT=50%");
    ck_assert_uint_eq(d.len, 0);
    ck_assert_int_eq(p.limit.kind, GM_LIMIT_PERCENT);
    ck_assert_uint_eq(gm_policy_limit_for_ex(&p, 0, 100 * GiB, &clamped),
                      40 * GiB);
    ck_assert(clamped);
    ck_assert_uint_eq(gm_policy_limit_for_ex(&p, 0, 60 * GiB, &clamped),
                      30 * GiB);
    ck_assert(!clamped);
    /* share under a size ceiling. */
    ALOAD("GPUMEM_MAX_LIMIT=10G\n", "GPUMEM_LIMIT=share",
          "LOCAL_WORLD_SIZE=2");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 10 * GiB);
}
END_TEST

START_TEST(ceiling_survives_bad_env)
{
    /* GPUMEM_ON_BAD_CONFIG=warn runs with defaults for bad values; the
     * ceiling is not one of them. */
    ALOAD("GPUMEM_MAX_LIMIT=1G\n", "GPUMEM_ON_BAD_CONFIG=warn",
          "GPUMEM_LIMIT=lots");
    ck_assert_int_eq(rc, -1);
    ck_assert(!p.admin_fatal);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 1 * GiB);
}
END_TEST

/* Under warn, a refused limit of the job's says what holds instead:
 * HAMi-core's grant, the admin's default and ceiling. */
START_TEST(warn_names_the_limit_left)
{
    ALOAD("", "GPUMEM_ON_BAD_CONFIG=warn", "CUDA_DEVICE_MEMORY_LIMIT=1024m",
          "GPUMEM_LIMIT=bad");
    HAS("gpumem: GPUMEM_ON_BAD_CONFIG=warn: this process runs without "
        "GPUMEM_LIMIT: the limit is CUDA_DEVICE_MEMORY_LIMIT='1024m' "
        "(1.0 GiB), the scheduler's grant\n");
    ALOAD("", "GPUMEM_ON_BAD_CONFIG=warn", "CUDA_DEVICE_MEMORY_LIMIT=1.5g");
    HAS("gpumem: GPUMEM_ON_BAD_CONFIG=warn: this process runs without "
        "CUDA_DEVICE_MEMORY_LIMIT: no memory limit\n");
    ALOAD("", "GPUMEM_ON_BAD_CONFIG=warn", "CUDA_DEVICE_MEMORY_LIMIT=1g",
          "CUDA_DEVICE_MEMORY_LIMIT_2=010");
    HAS("gpumem: GPUMEM_ON_BAD_CONFIG=warn: this process runs without "
        "CUDA_DEVICE_MEMORY_LIMIT_2: on device 2, the limit is "
        "CUDA_DEVICE_MEMORY_LIMIT='1g' (1.0 GiB), the scheduler's grant\n");
    ALOAD("GPUMEM_LIMIT=8G\nGPUMEM_MAX_LIMIT=4G\n", "GPUMEM_LIMIT=4G5",
          "GPUMEM_ON_BAD_CONFIG=warn");
    HAS("gpumem: GPUMEM_ON_BAD_CONFIG=warn: this process runs without "
        "GPUMEM_LIMIT: the limit is the admin ceiling GPUMEM_MAX_LIMIT "
        "(4.0 GiB, /etc/gpumem/policy:2)\n");
    ALOAD("GPUMEM_LIMIT=8G\nGPUMEM_MAX_LIMIT=50%\n", "GPUMEM_LIMIT=4G5",
          "GPUMEM_ON_BAD_CONFIG=warn");
    HAS("the limit is the admin default GPUMEM_LIMIT (8.0 GiB, "
        "/etc/gpumem/policy), or 50% of physical memory (the admin ceiling "
        "GPUMEM_MAX_LIMIT, /etc/gpumem/policy:2) where smaller\n");
}
END_TEST

START_TEST(static_mode_under_ceiling)
{
    /* The ceiling is a limit: static mode has an arena size. */
    ALOAD("GPUMEM_MAX_LIMIT=8G\n", "GPUMEM_MODE=static");
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(p.mode, GM_MODE_STATIC);
    ALOAD("GPUMEM_MODE=static\n", "PATH=/bin");
    ck_assert(p.admin_fatal);
    HAS("policy:1: GPUMEM_MODE=static needs a limit");
}
END_TEST

/* GPUMEM_STATIC_SIZE above a limit the job did not write (a grant, the
 * ceiling, an admin default) is held to it with a line naming it, the
 * same whatever GPUMEM_LIMIT form leaves that limit in force; above the
 * job's own limit it stays an error (test_policy static_size_above_limit). */
START_TEST(static_size_held_to_a_limit_not_the_jobs)
{
    static char *const limits[] = { NULL, "GPUMEM_LIMIT=none",
                                    "GPUMEM_LIMIT=50%",
                                    "GPUMEM_LIMIT=4G" };
    for (unsigned i = 0; i < 4; i++) {
        ALOAD("", "GPUMEM_MODE=static", "GPUMEM_STATIC_SIZE=5G",
              "CUDA_DEVICE_MEMORY_LIMIT=1g",
              limits[i] ? limits[i] : "PATH=/bin");
        ck_assert_int_eq(rc, 0);
        HAS("gpumem: GPUMEM_STATIC_SIZE='5G' (5.0 GiB) is above "
            "CUDA_DEVICE_MEMORY_LIMIT='1g' (1.0 GiB), the scheduler's grant; "
            "the arena takes the room that limit leaves");
        ck_assert_int_eq(p.mode, GM_MODE_STATIC);
        ck_assert_uint_eq(p.static_size.bytes, 5 * GiB);
        ck_assert_uint_eq(p.static_said, ~0ull);
    }
    ALOAD("GPUMEM_MAX_LIMIT=4G\n", "GPUMEM_MODE=static",
          "GPUMEM_STATIC_SIZE=5G");
    ck_assert_int_eq(rc, 0);
    HAS("gpumem: GPUMEM_STATIC_SIZE='5G' (5.0 GiB) is above the admin "
        "ceiling GPUMEM_MAX_LIMIT (4.0 GiB, /etc/gpumem/policy:1); the arena "
        "takes the room that limit leaves");
    ck_assert_msg(strstr(d.text, "(default)") == NULL, "%s", d.text);
    ALOAD("GPUMEM_LIMIT=4G\nGPUMEM_STATIC_SIZE=5G\n", "GPUMEM_MODE=static");
    ck_assert_int_eq(rc, 0);
    HAS("gpumem: the admin default GPUMEM_STATIC_SIZE (5.0 GiB) is above the "
        "admin default GPUMEM_LIMIT (4.0 GiB, /etc/gpumem/policy)");
    /* A device's own grant: that device only. */
    ALOAD("", "GPUMEM_MODE=static", "GPUMEM_STATIC_SIZE=2G",
          "GPUMEM_LIMIT=8G", "CUDA_DEVICE_MEMORY_LIMIT_1=1g");
    ck_assert_int_eq(rc, 0);
    HAS("gpumem: GPUMEM_STATIC_SIZE='2G' (2.0 GiB) is above "
        "CUDA_DEVICE_MEMORY_LIMIT_1='1g' (1.0 GiB), the scheduler's grant; "
        "the arena on device 1 takes the room that limit leaves");
    ck_assert_uint_eq(p.static_said, 1ull << 1);
    /* Within the limit, or a limit known only on the device: nothing. */
    ALOAD("", "GPUMEM_MODE=static", "GPUMEM_STATIC_SIZE=512M",
          "CUDA_DEVICE_MEMORY_LIMIT=1g");
    ck_assert_uint_eq(d.len, 0);
    ALOAD("GPUMEM_MAX_LIMIT=50%\n", "GPUMEM_MODE=static",
          "GPUMEM_STATIC_SIZE=64G");
    ck_assert_uint_eq(d.len, 0);
    ck_assert_uint_eq(p.static_said, 0);
    /* A refused size of the job's falls back to the admin's, named so. */
    ALOAD("GPUMEM_STATIC_SIZE=5G\n", "GPUMEM_MODE=static",
          "GPUMEM_STATIC_SIZE=lots", "GPUMEM_LIMIT=4G",
          "GPUMEM_ON_BAD_CONFIG=warn");
    ck_assert_uint_eq(d.errors, 1);
    HAS("gpumem: the admin default GPUMEM_STATIC_SIZE (5.0 GiB) is above "
        "GPUMEM_LIMIT='4G' (4.0 GiB); the arena takes the room that limit "
        "leaves");
}
END_TEST

/* ---- forced group -------------------------------------------------------- */

START_TEST(forced_group)
{
    const char *f = "GPUMEM_FORCE_GROUP=slurm-{SLURM_JOB_ID}\n"
                    "GPUMEM_GROUP_LIMIT=64G\n";

    ALOAD(f, "SLURM_JOB_ID=4242");
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(p.group, "slurm-4242");
    ck_assert_uint_eq(p.group_limit.bytes, 64 * GiB);
    ck_assert_int_eq(p.src[GM_F_GROUP], GM_SRC_ADMIN);
    ck_assert_str_eq(p.admin.forced, "slurm-4242");
    ck_assert_uint_eq(d.len, 0);

    ALOAD(f, "SLURM_JOB_ID=7", "GPUMEM_GROUP=mine", "GPUMEM_GROUP_LIMIT=1T");
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(p.group, "slurm-7");
    ck_assert_uint_eq(p.group_limit.bytes, 64 * GiB);
    ck_assert(p.clamped[GM_F_GROUP]);
    ck_assert_str_eq(p.asked[GM_F_GROUP], "mine");
    HAS("GPUMEM_GROUP='mine' is replaced by the admin's group for this job, "
        "'slurm-7'");
    HAS("GPUMEM_GROUP_LIMIT='1T' is ignored");

    /* Outside a job: no forced group, and the env's own group stands. */
    ALOAD(f, "GPUMEM_GROUP=mine", "GPUMEM_GROUP_LIMIT=2G");
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(p.group, "mine");
    ck_assert_str_eq(p.admin.force_unset, "SLURM_JOB_ID");

    /* A job id that does not make a group name. */
    ALOAD(f, "SLURM_JOB_ID=4 2");
    ck_assert_int_eq(rc, -1);
    ck_assert(!p.admin_fatal);
    ck_assert_str_eq(p.group, "");
    HAS("GPUMEM_FORCE_GROUP (expanded)='slurm-4 2' contains a space");
}
END_TEST

START_TEST(forced_group_file_errors)
{
    ALOAD("GPUMEM_FORCE_GROUP=slurm-{SLURM_JOB_ID}\n", "SLURM_JOB_ID=1");
    ck_assert(p.admin_fatal);
    HAS("policy:1: GPUMEM_FORCE_GROUP needs the group's limit");
    ALOAD("GPUMEM_GROUP_LIMIT=1G\nGPUMEM_FORCE_GROUP=job-{SLURM JOB}\n",
          "PATH=/");
    ck_assert(p.admin_fatal);
    HAS("policy:2: GPUMEM_FORCE_GROUP='job-{SLURM JOB}' has '{SLURM JOB}', "
        "which is not a variable name; use characters");
    ALOAD("GPUMEM_GROUP_LIMIT=1G\nGPUMEM_FORCE_GROUP=job-{X\n", "PATH=/");
    HAS("has a '{' without '}'");
    ALOAD("GPUMEM_GROUP_LIMIT=1G\nGPUMEM_FORCE_GROUP=job/{X}\n", "PATH=/");
    HAS("contains '/', which is not allowed");
}
END_TEST

/* ---- out-of-memory policies and telemetry -------------------------------- */

START_TEST(allowed_on_oom)
{
    const char *f = "GPUMEM_ALLOW_ON_OOM=fail, wait\n";

    ALOAD(f, "GPUMEM_ON_OOM=spill");
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(p.on_oom, GM_OOM_FAIL);
    ck_assert(p.clamped[GM_F_ON_OOM]);
    HAS("GPUMEM_ON_OOM='spill' is not allowed on this node "
        "(GPUMEM_ALLOW_ON_OOM=fail,wait, /etc/gpumem/policy:1); using fail");
    ALOAD(f, "GPUMEM_ON_OOM=wait:30s");
    ck_assert_uint_eq(d.len, 0);
    ck_assert_int_eq(p.on_oom, GM_OOM_WAIT);
    ck_assert_uint_eq(p.oom_wait_ns, 30000000000ull);
    /* The admin's default stands in for a disallowed env value. */
    ALOAD("GPUMEM_ALLOW_ON_OOM=wait\nGPUMEM_ON_OOM=wait:5s\n",
          "GPUMEM_ON_OOM=warn");
    ck_assert_int_eq(p.on_oom, GM_OOM_WAIT);
    ck_assert_uint_eq(p.oom_wait_ns, 5000000000ull);
    /* The file's own default must be allowed. */
    ALOAD("GPUMEM_ALLOW_ON_OOM=wait\n", "PATH=/");
    ck_assert(p.admin_fatal);
    HAS("policy:1: GPUMEM_ALLOW_ON_OOM does not allow the default "
        "out-of-memory policy, fail");
    ALOAD("GPUMEM_ALLOW_ON_OOM=fail,,wait\n", "PATH=/");
    ck_assert(p.admin_fatal);
    HAS("GPUMEM_ALLOW_ON_OOM='fail,,wait' has an empty entry; use a "
        "comma-separated list of fail, wait, spill, warn");
    ALOAD("GPUMEM_ALLOW_ON_OOM=fail,crash\n", "PATH=/");
    HAS("names something that is not an out-of-memory policy");
}
END_TEST

START_TEST(forced_telemetry)
{
    ALOAD("GPUMEM_FORCE_TELEMETRY=1\n", "GPUMEM_TELEMETRY=0",
          "GPUMEM_REPORT=1");
    ck_assert_int_eq(rc, 0);
    ck_assert(p.telemetry);
    ck_assert_int_eq(p.report, GM_REPORT_STDERR);
    HAS("GPUMEM_TELEMETRY=0 is overridden: the admin keeps telemetry on");
    ALOAD("GPUMEM_FORCE_TELEMETRY=1\nGPUMEM_TELEMETRY=0\n", "PATH=/");
    ck_assert(p.admin_fatal);
    HAS("contradicts GPUMEM_FORCE_TELEMETRY=1 (line 1)");
}
END_TEST

/* ---- output -------------------------------------------------------------- */

START_TEST(format_sources)
{
    static char out[16384];

    ALOAD("GPUMEM_MAX_LIMIT=40G\nGPUMEM_MODE=staged\n", "GPUMEM_LIMIT=none");
    gm_policy_format(&p, false, out, sizeof out);
    ck_assert_msg(strstr(out, "GPUMEM_LIMIT           40.0 GiB (42949672960 "
                          "B) (asked none)") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "GPUMEM_MAX_LIMIT       40.0 GiB (42949672960 "
                          "B)           admin\n") != NULL, "%s", out);
    ck_assert(strstr(out, "GPUMEM_MODE            staged                   "
                     "          admin\n") != NULL);
    ck_assert(strstr(out, "/etc/gpumem/policy (read)") != NULL);
    gm_policy_format_ex(&p, &d, true, out, sizeof out);
    ck_assert_msg(strstr(out, "\"GPUMEM_LIMIT\": {\"value\": \"40.0 GiB "
                          "(42949672960 B)\", \"kind\": \"bytes\", "
                          "\"bytes\": 42949672960, \"clamped\": true, "
                          "\"asked\": \"none\", \"source\": \"admin\"}")
                  != NULL, "%s", out);
}
END_TEST

/* ---- HAMi-core ----------------------------------------------------------- */

static const struct { const char *s; uint64_t v; } hami_good[] = {
    { "1g", GiB }, { "1G", GiB }, { "1024m", GiB }, { "1048576k", GiB },
    { "1073741824", GiB }, { "0", 0 }, { "512M", 512 * MiB }, { "7", 7 },
    { "17179869183g", 17179869183ull * GiB },
};

START_TEST(hami_forms)
{
    uint64_t v = 1;

    ck_assert_int_eq(gm_parse_hami_size_ex(hami_good[_i].s, &v, NULL),
                     GM_PERR_OK);
    ck_assert_uint_eq(v, hami_good[_i].v);
}
END_TEST

static const struct { const char *s; enum gm_perr e; } hami_bad[] = {
    { "", GM_PERR_EMPTY }, { "-1g", GM_PERR_NEGATIVE }, { "g", GM_PERR_SYNTAX },
    { "1.5g", GM_PERR_TRAILING }, { "1gb", GM_PERR_TRAILING },
    { "1GiB", GM_PERR_TRAILING }, { "1t", GM_PERR_TRAILING },
    { "010", GM_PERR_TRAILING }, { "0x10", GM_PERR_TRAILING },
    { " 1g", GM_PERR_SYNTAX }, { "17179869184g1", GM_PERR_TRAILING },
    { "17179869184g", GM_PERR_OVERFLOW },
    { "99999999999999999999", GM_PERR_OVERFLOW },
};

START_TEST(hami_refusals)
{
    uint64_t v = 77;

    ck_assert_int_eq(gm_parse_hami_size_ex(hami_bad[_i].s, &v, NULL),
                     hami_bad[_i].e);
    ck_assert_uint_eq(v, 77);
}
END_TEST

START_TEST(hami_mapping)
{
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT=1g", "CUDA_DEVICE_MEMORY_LIMIT_1=2048m",
          "CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/x.cache",
          "CUDA_DEVICE_SM_LIMIT=50");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(d.len, 0);
    ck_assert(p.hami);
    ck_assert(p.hami_shared_cache);
    ck_assert_int_eq(p.src[GM_F_LIMIT], GM_SRC_ENV);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 1, 80 * GiB), 2 * GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 2, 80 * GiB), GiB);
    /* Per device only, as HAMi's device plugin writes it. */
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT_0=1024m");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 1, 80 * GiB), 0);
    /* With GPUMEM_LIMIT (or any GPUMEM_LIMIT_<N>) set, HAMi's values are
     * the scheduler's grant: the job's limit may tighten it, not lift it. */
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT=1g", "GPUMEM_LIMIT=512M");
    ck_assert(!p.hami);
    ck_assert(p.hami_capped);
    ck_assert_uint_eq(d.len, 0);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 512 * MiB);
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT=1g", "GPUMEM_LIMIT=4G");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), GiB);
    HAS("gpumem: GPUMEM_LIMIT='4G' is above CUDA_DEVICE_MEMORY_LIMIT='1g', "
        "the scheduler's grant; the limit is 1.0 GiB");
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT_0=1024m", "GPUMEM_LIMIT=none");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 1, 80 * GiB), 0);
    HAS("GPUMEM_LIMIT='none' is above CUDA_DEVICE_MEMORY_LIMIT_0='1024m'");
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT=1g", "GPUMEM_LIMIT_3=4G");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 3, 80 * GiB), GiB);
    /* A percentage against the grant: per device. */
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT=8g", "GPUMEM_LIMIT=50%");
    ck_assert_uint_eq(d.len, 0);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 8 * GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 10 * GiB), 5 * GiB);
    /* Allowed CUDA_DISABLE_CONTROL lifts the grant too. */
    ALOAD("GPUMEM_ALLOW_DISABLE=1\n", "CUDA_DEVICE_MEMORY_LIMIT=1g",
          "GPUMEM_LIMIT=4G", "CUDA_DISABLE_CONTROL=true");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 0);
    /* An admin default is a default: HAMi's value is the job's, per
     * device defaults included. */
    ALOAD("GPUMEM_LIMIT=8G\nGPUMEM_LIMIT_1=16G\n",
          "CUDA_DEVICE_MEMORY_LIMIT=1g");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 1, 80 * GiB), GiB);
}
END_TEST

/* A grant that holds the job's limit down is shown as the effective
 * value, with what was asked, as an admin ceiling is: in text and JSON,
 * on the row of every device and on a device's own row. */
START_TEST(hami_format_shows_the_grant)
{
    static char out[16384];

    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT=8192m", "GPUMEM_LIMIT=16G");
    gm_policy_format(&p, false, out, sizeof out);
    ck_assert_msg(strstr(out, "GPUMEM_LIMIT           8.0 GiB (8589934592 B) "
                          "(asked 16.0 GiB, the grant of "
                          "CUDA_DEVICE_MEMORY_LIMIT)") != NULL, "%s", out);
    gm_policy_format(&p, true, out, sizeof out);
    ck_assert_msg(strstr(out, "\"GPUMEM_LIMIT\": {\"value\": \"8.0 GiB "
                          "(8589934592 B)\", \"kind\": \"bytes\", \"bytes\": "
                          "8589934592, \"clamped\": true, \"asked\": "
                          "\"16.0 GiB\", \"ceiling\": "
                          "\"CUDA_DEVICE_MEMORY_LIMIT\", \"source\": \"env\"}")
                  != NULL, "%s", out);
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT_0=8192m", "GPUMEM_LIMIT=none");
    gm_policy_format(&p, false, out, sizeof out);
    ck_assert_msg(strstr(out, "GPUMEM_LIMIT           none     ") != NULL &&
                  strstr(out, "GPUMEM_LIMIT_0         8.0 GiB (8589934592 B) "
                         "(asked none, the grant of "
                         "CUDA_DEVICE_MEMORY_LIMIT_0)") != NULL &&
                  strstr(out, "GPUMEM_LIMIT_1 ") == NULL, "%s", out);
    gm_policy_format(&p, true, out, sizeof out);
    ck_assert_msg(strstr(out, "\"GPUMEM_LIMIT_0\": {\"value\": \"8.0 GiB "
                          "(8589934592 B)\", \"kind\": \"bytes\"") != NULL &&
                  strstr(out, "\"GPUMEM_LIMIT_<N>\"") == NULL, "%s", out);
    /* A grant that does not hold the limit down changes nothing shown. */
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT=8192m", "GPUMEM_LIMIT=2G");
    gm_policy_format(&p, false, out, sizeof out);
    ck_assert_msg(strstr(out, "GPUMEM_LIMIT           2.0 GiB (2147483648 B) "
                          "            env\n") != NULL, "%s", out);
    /* A percentage is held per device: the row says up to what. */
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT=8192m", "GPUMEM_LIMIT=50%");
    gm_policy_format(&p, false, out, sizeof out);
    ck_assert_msg(strstr(out, "50% of physical memory, at most 8.0 GiB "
                          "(CUDA_DEVICE_MEMORY_LIMIT)") != NULL, "%s", out);
}
END_TEST

START_TEST(hami_messages)
{
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT=1.5g");
    ck_assert_int_eq(rc, -1);
    HAS("gpumem: CUDA_DEVICE_MEMORY_LIMIT='1.5g' has unexpected text '.5g' "
        "after '1'; use HAMi-core's form: a whole number of bytes, or with "
        "k, m or g (binary: 1g = 1024m), e.g. 1024m");
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT_0=0x400");
    ck_assert_int_eq(rc, -1);
    HAS("CUDA_DEVICE_MEMORY_LIMIT_0='0x400' starts with 0, which HAMi-core "
        "reads as octal or hex");
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT=0");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 0);
    HAS("CUDA_DEVICE_MEMORY_LIMIT='0' means no limit (as in HAMi-core)");
    /* A device's 0 says what the device gets instead. */
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT_0=0", "CUDA_DEVICE_MEMORY_LIMIT=1g");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), GiB);
    HAS("gpumem: CUDA_DEVICE_MEMORY_LIMIT_0='0' sets no limit of its own "
        "(as in HAMi-core); device 0 takes CUDA_DEVICE_MEMORY_LIMIT='1g' "
        "(1.0 GiB)");
    ck_assert_uint_eq(count_lines(d.text), 1);
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT_2=0", "CUDA_DEVICE_MEMORY_LIMIT=1g",
          "GPUMEM_LIMIT=4G");
    HAS("gpumem: CUDA_DEVICE_MEMORY_LIMIT_2='0' sets no limit of its own "
        "(as in HAMi-core); device 2 is held to the grant of "
        "CUDA_DEVICE_MEMORY_LIMIT='1g' (1.0 GiB)");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 2, 80 * GiB), GiB);
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT_0=0", "CUDA_DEVICE_MEMORY_LIMIT_1=1g");
    HAS("gpumem: CUDA_DEVICE_MEMORY_LIMIT_0='0' means no limit (as in "
        "HAMi-core); device 0 gets no limit from HAMi-core's variables");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 0);
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT_64=1g");
    ck_assert_int_eq(rc, 0);
    HAS("CUDA_DEVICE_MEMORY_LIMIT_64 does not name a device ordinal");
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT=");
    ck_assert_uint_eq(d.len, 0);
    ck_assert(!p.hami);
    /* Under a ceiling, named as the job wrote it. */
    ALOAD("GPUMEM_MAX_LIMIT=40G\n", "CUDA_DEVICE_MEMORY_LIMIT=100g");
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 40 * GiB);
    HAS("gpumem: CUDA_DEVICE_MEMORY_LIMIT='100g' is above the admin ceiling");
}
END_TEST

/* A grant's line names the value the job wrote and that it holds down,
 * on the device it holds: never a GPUMEM_LIMIT the job did not set, nor
 * one that was refused. */
START_TEST(hami_grant_lines_name_the_job_value)
{
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT=1024m", "GPUMEM_LIMIT_0=2G");
    ck_assert_int_eq(rc, 0);
    HAS("gpumem: GPUMEM_LIMIT_0='2G' is above CUDA_DEVICE_MEMORY_LIMIT="
        "'1024m', the scheduler's grant; the limit on device 0 is 1.0 GiB");
    ck_assert_uint_eq(count_lines(d.text), 1);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 1, 80 * GiB), GiB);
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT_1=1024m", "GPUMEM_LIMIT_1=2G");
    HAS("gpumem: GPUMEM_LIMIT_1='2G' is above CUDA_DEVICE_MEMORY_LIMIT_1="
        "'1024m', the scheduler's grant; the limit on device 1 is 1.0 GiB");
    ck_assert_uint_eq(count_lines(d.text), 1);
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT_0=1024m", "GPUMEM_LIMIT=none");
    HAS("gpumem: GPUMEM_LIMIT='none' is above CUDA_DEVICE_MEMORY_LIMIT_0="
        "'1024m', the scheduler's grant; the limit on device 0 is 1.0 GiB");
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT=1024m", "GPUMEM_LIMIT=bad",
          "GPUMEM_ON_BAD_CONFIG=warn");
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(d.text, "is above") == NULL, "%s", d.text);
    /* An admin default under the grant is held without a line. */
    ALOAD("GPUMEM_LIMIT_0=8G\n", "CUDA_DEVICE_MEMORY_LIMIT=1024m",
          "GPUMEM_LIMIT_1=512M");
    ck_assert_uint_eq(d.len, 0);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), GiB);
}
END_TEST

START_TEST(disable_control)
{
    /* Not allowed: limits stay. */
    ALOAD("", "CUDA_DEVICE_MEMORY_LIMIT=1g", "CUDA_DISABLE_CONTROL=true");
    ck_assert_int_eq(rc, 0);
    ck_assert(!p.disabled);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), GiB);
    HAS("CUDA_DISABLE_CONTROL='true' is ignored: the admin policy");
    /* Without any admin file either. */
    char *env[] = { "GPUMEM_LIMIT=1G", "CUDA_DISABLE_CONTROL=1", NULL };
    rc = gm_policy_load(&p, env, &d);
    ck_assert(!p.disabled);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), GiB);
    /* Allowed: nothing is limited, the ceiling included. */
    ALOAD("GPUMEM_ALLOW_DISABLE=1\nGPUMEM_MAX_LIMIT=4G\n",
          "GPUMEM_LIMIT=1G", "CUDA_DISABLE_CONTROL=True");
    ck_assert_int_eq(rc, 0);
    ck_assert(p.disabled);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 0);
    ck_assert(!gm_policy_enforces(&p));
    HAS("CUDA_DISABLE_CONTROL='True': no limit is enforced in this process");
    ALOAD("GPUMEM_ALLOW_DISABLE=1\n", "GPUMEM_LIMIT=1G",
          "CUDA_DISABLE_CONTROL=false");
    ck_assert(!p.disabled);
    ck_assert_uint_eq(d.len, 0);
    ALOAD("GPUMEM_ALLOW_DISABLE=1\n", "GPUMEM_LIMIT=1G",
          "CUDA_DISABLE_CONTROL=yes");
    ck_assert(!p.disabled);
    HAS("CUDA_DISABLE_CONTROL='yes' is not a boolean");
}
END_TEST

/* ---- reading the file (as root: ownership is the point) ------------------ */

static char dir[64];

static void mk(const char *rel, const char *text, mode_t mode)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    ck_assert_int_eq(chmod(path, mode), 0);
}

static void read_rel(const char *rel)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    gm_admin_read(path, &af);
}

static void setup_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/gmadminXXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    chmod(dir, 0755);
}

static void teardown_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

START_TEST(read_trusted)
{
    if (geteuid() != 0)
        return;     /* only root can make a root-owned file */
    setup_dir();
    mk("policy", "GPUMEM_MAX_LIMIT=4G\n", 0644);
    read_rel("policy");
    ck_assert_int_eq(af.state, GM_ADMIN_READ);
    ck_assert_str_eq(af.text, "GPUMEM_MAX_LIMIT=4G\n");
    ck_assert_uint_eq(af.len, 20);
    read_rel("absent");
    ck_assert_int_eq(af.state, GM_ADMIN_ABSENT);
    read_rel("nodir/policy");
    ck_assert_int_eq(af.state, GM_ADMIN_ABSENT);
    teardown_dir();
}
END_TEST

START_TEST(read_refusals)
{
    char path[256], target[256];

    if (geteuid() != 0)
        return;
    setup_dir();
    mk("loose", "X=1\n", 0664);
    read_rel("loose");
    ck_assert_int_eq(af.state, GM_ADMIN_REFUSED);
    ck_assert_msg(strstr(af.why, "is writable by group or others (mode "
                         "0664)") != NULL, "%s", af.why);

    mk("foreign", "X=1\n", 0644);
    snprintf(path, sizeof path, "%s/foreign", dir);
    ck_assert_int_eq(chown(path, 65534, 0), 0);
    read_rel("foreign");
    ck_assert_int_eq(af.state, GM_ADMIN_REFUSED);
    ck_assert(strstr(af.why, "is owned by uid 65534, not root") != NULL);

    mk("real", "GPUMEM_MAX_LIMIT=4G\n", 0644);
    snprintf(path, sizeof path, "%s/link", dir);
    snprintf(target, sizeof target, "%s/real", dir);
    ck_assert_int_eq(symlink(target, path), 0);
    read_rel("link");
    ck_assert_int_eq(af.state, GM_ADMIN_REFUSED);
    ck_assert(strstr(af.why, "is a symbolic link") != NULL);

    /* A link in the directory chain. */
    snprintf(path, sizeof path, "%s/dirlink", dir);
    ck_assert_int_eq(symlink(dir, path), 0);
    read_rel("dirlink/real");
    ck_assert_int_eq(af.state, GM_ADMIN_REFUSED);
    ck_assert_msg(strstr(af.why, "dirlink is a symbolic link") != NULL, "%s",
                  af.why);

    /* A directory others may write to. */
    snprintf(path, sizeof path, "%s/open", dir);
    ck_assert_int_eq(mkdir(path, 0777), 0);
    ck_assert_int_eq(chmod(path, 0777), 0);
    mk("open/policy", "X=1\n", 0644);
    read_rel("open/policy");
    ck_assert_int_eq(af.state, GM_ADMIN_REFUSED);
    ck_assert_msg(strstr(af.why, "/open is writable by group or others (mode "
                         "0777)") != NULL, "%s", af.why);
    /* ... unless sticky (like /tmp): the root-owned file stays root's. */
    ck_assert_int_eq(chmod(path, 01777), 0);
    read_rel("open/policy");
    ck_assert_int_eq(af.state, GM_ADMIN_READ);

    snprintf(path, sizeof path, "%s/fifo", dir);
    ck_assert_int_eq(mkfifo(path, 0644), 0);
    read_rel("fifo");
    ck_assert_int_eq(af.state, GM_ADMIN_REFUSED);
    ck_assert(strstr(af.why, "is not a regular file") != NULL);

    static char big[GM_ADMIN_TEXT_MAX + 2];
    memset(big, '#', sizeof big - 1);
    mk("big", big, 0644);
    read_rel("big");
    ck_assert_int_eq(af.state, GM_ADMIN_REFUSED);
    ck_assert(strstr(af.why, "is larger than 65536 bytes") != NULL);

    snprintf(path, sizeof path, "%s/nul", dir);
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "X=1\n\0Y=2\n", 9), 9);
    close(fd);
    read_rel("nul");
    ck_assert_int_eq(af.state, GM_ADMIN_REFUSED);
    ck_assert(strstr(af.why, "NUL byte") != NULL);

    gm_admin_read("etc/gpumem/policy", &af);
    ck_assert_int_eq(af.state, GM_ADMIN_REFUSED);
    ck_assert(strstr(af.why, "is not an absolute path") != NULL);
    teardown_dir();
}
END_TEST

/* No descriptor left (EMFILE): the file cannot be checked, which is
 * said as such (not as an untrusted file), and it still fails closed. */
START_TEST(read_without_descriptors)
{
    struct rlimit rl, low;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    low = rl;
    low.rlim_cur = 32;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fds[64], n = 0;
    while (n < 64 && (fds[n] = dup(0)) >= 0)
        n++;
    int e = errno;
    gm_admin_read("/etc/gpumem/policy", &af);
    while (n > 0)
        close(fds[--n]);
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    ck_assert_int_eq(e, EMFILE);
    ck_assert_int_eq(af.state, GM_ADMIN_REFUSED);
    ck_assert(af.no_fd);
    ck_assert_msg(strstr(af.why, "no file descriptor left") != NULL, "%s",
                  af.why);
    rc = gm_policy_load_ex(&p, NULL, &af, &d);
    ck_assert_int_eq(rc, -1);
    ck_assert(p.admin_fatal);
    ck_assert_msg(strstr(d.text, "cannot be checked: this process has no "
                         "file descriptor left") != NULL, "%s", d.text);
    ck_assert_msg(strstr(d.text, "not trusted") == NULL, "%s", d.text);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *admin_suite(void)
{
    Suite *s = suite_create("admin");
    TCase *t = tcase_create("file");

    tcase_add_test(t, defaults_from_file);
    tcase_add_test(t, no_file);
    tcase_add_test(t, device_default_yields_to_env);
    tcase_add_test(t, refused_file_is_fatal);
    tcase_add_test(t, bad_lines);
    tcase_add_test(t, env_cannot_set_rules);
    tcase_add_test(t, read_trusted);
    tcase_add_test(t, read_refusals);
    tcase_add_test(t, read_without_descriptors);
    suite_add_tcase(s, t);

    t = tcase_create("rules");
    tcase_add_test(t, ceiling_none_gets_ceiling);
    tcase_add_test(t, ceiling_env_unset);
    tcase_add_test(t, ceiling_tighten);
    tcase_add_test(t, ceiling_other_kind);
    tcase_add_test(t, ceiling_survives_bad_env);
    tcase_add_test(t, warn_names_the_limit_left);
    tcase_add_test(t, static_mode_under_ceiling);
    tcase_add_test(t, static_size_held_to_a_limit_not_the_jobs);
    tcase_add_test(t, forced_group);
    tcase_add_test(t, forced_group_file_errors);
    tcase_add_test(t, allowed_on_oom);
    tcase_add_test(t, forced_telemetry);
    tcase_add_test(t, format_sources);
    suite_add_tcase(s, t);

    t = tcase_create("hami");
    tcase_add_loop_test(t, hami_forms, 0, N(hami_good));
    tcase_add_loop_test(t, hami_refusals, 0, N(hami_bad));
    tcase_add_test(t, hami_mapping);
    tcase_add_test(t, hami_messages);
    tcase_add_test(t, hami_grant_lines_name_the_job_value);
    tcase_add_test(t, hami_format_shows_the_grant);
    tcase_add_test(t, disable_control);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(admin_suite());
    int failed;

    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
