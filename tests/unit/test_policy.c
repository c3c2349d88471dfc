/*
 * tests/unit/test_policy.c — Check suite for policy/ (options.c, load.c, format.c) and
 * policy/suggest.c: every GPUMEM_* form, every refusal with its message
 * (naming the variable, quoting the value), cross-variable checks, local
 * ranks for share, per-device precedence, limit resolution, the
 * unknown-variable suggestion, and the text/JSON/summary output.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

static struct gm_policy p;
static struct gm_diag d;
static int rc;

/* Load from a literal environment: LOAD("GPUMEM_LIMIT=4G", ...). */
#define LOAD(...)                                                   \
    do {                                                            \
        char *env_[] = { __VA_ARGS__, NULL };                       \
        rc = gm_policy_load(&p, env_, &d);                          \
    } while (0)

static const char F_LIMIT[] =
    "use bytes, a number with K/M/G/T (binary units), NN%, share[:F], or none";

static unsigned count_lines(const char *s)
{
    unsigned n = 0;

    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Exactly one error, one well-formed line naming NAME='VALUE', holding
 * `phrase`; the policy is refused. */
static void expect_error(const char *name, const char *value,
                         const char *phrase)
{
    char quoted[512];

    snprintf(quoted, sizeof quoted, "gpumem: %s='%s' ", name, value);
    ck_assert_msg(rc == -1, "%s='%s' accepted", name, value);
    ck_assert_msg(d.errors == 1, "%s='%s': %u errors:\n%s", name, value,
                  d.errors, d.text);
    ck_assert_msg(strstr(d.text, quoted) != NULL, "no \"%s\" in: %s", quoted,
                  d.text);
    ck_assert_msg(strstr(d.text, phrase) != NULL, "no \"%s\" in: %s", phrase,
                  d.text);
    ck_assert_msg(strstr(d.text, "; use ") != NULL || strstr(d.text, "; set ")
                  != NULL, "no accepted forms in: %s", d.text);
    ck_assert_uint_eq(count_lines(d.text), 1);
    ck_assert_uint_eq(strlen(d.text), d.len);
    ck_assert_int_eq(d.text[d.len - 1], '\n');
}

static void expect_clean(void)
{
    ck_assert_msg(rc == 0 && d.errors == 0 && d.warnings == 0,
                  "rc %d, %u errors, %u warnings:\n%s", rc, d.errors,
                  d.warnings, d.text);
    ck_assert_uint_eq(d.len, 0);
}

/* ---- defaults ---------------------------------------------------------- */

START_TEST(defaults)
{
    unsigned i;

    rc = gm_policy_load(&p, NULL, &d);
    expect_clean();
    ck_assert_int_eq(p.limit.kind, GM_LIMIT_NONE);
    for (i = 0; i < GM_MAX_DEVICES; i++)
        ck_assert(!p.dev_limit_set[i]);
    ck_assert_int_eq(p.mode, GM_MODE_GROW);
    ck_assert_int_eq(p.static_size.kind, GM_LIMIT_NONE);
    ck_assert_uint_eq(p.warmup_ns, 60000000000ull);
    ck_assert(p.headroom == 0.10);
    ck_assert_int_eq(p.on_oom, GM_OOM_FAIL);
    ck_assert_uint_eq(p.oom_wait_ns, 60000000000ull);
    ck_assert_str_eq(p.group, "");
    ck_assert_int_eq(p.group_limit.kind, GM_LIMIT_NONE);
    ck_assert(p.priority == 1.0);
    ck_assert_int_eq(p.report, GM_REPORT_NONE);
    ck_assert(!p.keep);
    ck_assert_uint_eq(p.ring_events, 65536);
    ck_assert_str_eq(p.shm_prefix, "gpumem");
    ck_assert_int_eq(p.log_level, GM_LOG_WARN);
    ck_assert_str_eq(p.cuda_library, "libcuda.so.1");
    ck_assert_int_eq(p.on_bad_config, GM_BAD_EXIT);
    for (i = 0; i < GM_F_COUNT; i++)
        ck_assert_int_eq(p.src[i], GM_SRC_DEFAULT);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 0);
}
END_TEST

START_TEST(no_getenv)
{
    setenv("GPUMEM_LIMIT", "8G", 1);
    setenv("GPUMEM_MODE", "bogus", 1);
    LOAD("PATH=/usr/bin");
    unsetenv("GPUMEM_LIMIT");
    unsetenv("GPUMEM_MODE");
    expect_clean();
    ck_assert_int_eq(p.limit.kind, GM_LIMIT_NONE);
}
END_TEST

/* ---- GPUMEM_LIMIT forms ------------------------------------------------ */

struct limit_case {
    const char *v;
    enum gm_limit_kind kind;
    uint64_t bytes;
    double fraction;
};

static const struct limit_case good_limits[] = {
    { "1073741824", GM_LIMIT_BYTES, GiB, 0 },
    { "4G", GM_LIMIT_BYTES, 4 * GiB, 0 },
    { "4g", GM_LIMIT_BYTES, 4 * GiB, 0 },
    { "4GB", GM_LIMIT_BYTES, 4 * GiB, 0 },
    { "4GiB", GM_LIMIT_BYTES, 4 * GiB, 0 },
    { "4gib", GM_LIMIT_BYTES, 4 * GiB, 0 },
    { "1.5G", GM_LIMIT_BYTES, GiB + GiB / 2, 0 },
    { "512k", GM_LIMIT_BYTES, 512 * KiB, 0 },
    { "300MB", GM_LIMIT_BYTES, 300 * MiB, 0 },
    { "1B", GM_LIMIT_BYTES, 1, 0 },
    { "1T", GM_LIMIT_BYTES, 1024 * GiB, 0 },
    { "50%", GM_LIMIT_PERCENT, 0, 0.5 },
    { "12.5%", GM_LIMIT_PERCENT, 0, 0.125 },
    { "100%", GM_LIMIT_PERCENT, 0, 1.0 },
    { "share", GM_LIMIT_SHARE, 0, 1.0 },
    { "share:0.5", GM_LIMIT_SHARE, 0, 0.5 },
    { "share:1", GM_LIMIT_SHARE, 0, 1.0 },
    { "SHARE:0.25", GM_LIMIT_SHARE, 0, 0.25 },
    { "0", GM_LIMIT_NONE, 0, 0 },
    { "0G", GM_LIMIT_NONE, 0, 0 },
    { "none", GM_LIMIT_NONE, 0, 0 },
    { "unlimited", GM_LIMIT_NONE, 0, 0 },
    { "None", GM_LIMIT_NONE, 0, 0 },
};

START_TEST(limit_forms)
{
    const struct limit_case *c = &good_limits[_i];
    char var[64];

    snprintf(var, sizeof var, "GPUMEM_LIMIT=%s", c->v);
    LOAD(var);
    expect_clean();
    ck_assert_msg(p.limit.kind == c->kind, "'%s': kind %d", c->v,
                  p.limit.kind);
    ck_assert_uint_eq(p.src[GM_F_LIMIT], GM_SRC_ENV);
    if (c->kind == GM_LIMIT_BYTES)
        ck_assert_uint_eq(p.limit.bytes, c->bytes);
    if (c->kind == GM_LIMIT_PERCENT || c->kind == GM_LIMIT_SHARE)
        ck_assert(p.limit.fraction == c->fraction);
    if (c->kind == GM_LIMIT_SHARE)
        ck_assert_uint_eq(p.limit.ranks, 1);
}
END_TEST

struct err_case {
    const char *v;
    const char *phrase;
};

static const struct err_case bad_limits[] = {
    { "4 gigs", "is not a size" },
    { "99999999T", "is too large" },
    { "18446744073709551616", "is too large" },
    { "-4G", "is negative" },
    { "-1", "is negative" },
    { "", "is empty" },
    { "4Gx", "has unexpected text 'x' after '4G'" },
    { "4G ", "has unexpected text ' ' after '4G'" },
    { "50%x", "has unexpected text 'x' after '50%'" },
    { "0%", "is 0%" },
    { "0.0%", "is 0%" },
    { "0.0000000001%", "is below 0.0000001% (one part in a billion), the "
                       "finest a limit is taken to" },
    { "0.00000009%", "is below 0.0000001%" },
    { "101%", "is above 100%" },
    { "100.5%", "is above 100%" },
    { "-5%", "is negative" },
    { "share:0", "has a share fraction outside (0, 1]" },
    { "share:0.0000000009", "has a share fraction below 0.000000001" },
    { "share:1.5", "has a share fraction outside (0, 1]" },
    { "share:", "has a share fraction that is empty" },
    { "share:abc", "has a share fraction that is not a number" },
    { "share:-1", "has a share fraction that is negative" },
    { "sharex", "is not a size" },
    { "1.5", "is a fraction of a byte; use" },
    { "0.5", "is a fraction of a byte (did you mean 50%? a share of the "
             "device is written as a percentage)" },
    { "0.125", "(did you mean 12.5%?" },
    { "0.05", "(did you mean 5%?" },
    { "0.0000000000000000001G", "is a fraction of a byte" },
    { "0.00000000000000000001", "is a fraction of a byte" },
    { "100.0000000000000000001%", "is above 100%" },
    { "share:1.00000000000000001", "has a share fraction outside (0, 1]" },
    { "lots", "is not a size" },
};

START_TEST(limit_refusals)
{
    const struct err_case *c = &bad_limits[_i];
    char var[64];

    snprintf(var, sizeof var, "GPUMEM_LIMIT=%s", c->v);
    LOAD(var);
    expect_error("GPUMEM_LIMIT", c->v, c->phrase);
    ck_assert(strstr(d.text, F_LIMIT) != NULL);
    ck_assert_int_eq(p.limit.kind, GM_LIMIT_NONE);
    ck_assert_int_eq(p.src[GM_F_LIMIT], GM_SRC_DEFAULT);
}
END_TEST

START_TEST(limit_example_message)
{
    LOAD("GPUMEM_LIMIT=4 gigs");
    ck_assert_str_eq(d.text,
                     "gpumem: GPUMEM_LIMIT='4 gigs' is not a size; use "
                     "bytes, a number with K/M/G/T (binary units), NN%, "
                     "share[:F], or none\n");
}
END_TEST

START_TEST(group_limit_forms)
{
    LOAD("GPUMEM_GROUP=team", "GPUMEM_GROUP_LIMIT=20G");
    expect_clean();
    ck_assert_str_eq(p.group, "team");
    ck_assert_int_eq(p.group_limit.kind, GM_LIMIT_BYTES);
    ck_assert_uint_eq(p.group_limit.bytes, 20 * GiB);
    LOAD("GPUMEM_GROUP=team", "GPUMEM_GROUP_LIMIT=75%");
    expect_clean();
    ck_assert_int_eq(p.group_limit.kind, GM_LIMIT_PERCENT);
    LOAD("GPUMEM_GROUP=team", "GPUMEM_GROUP_LIMIT=20 G");
    /* The group-limit error only: no second "group without limit". */
    expect_error("GPUMEM_GROUP_LIMIT", "20 G", "is not a size");
    ck_assert_str_eq(p.group, "");
}
END_TEST

START_TEST(group_needs_limit)
{
    LOAD("GPUMEM_GROUP=team");
    expect_error("GPUMEM_GROUP", "team", "has no group limit");
    ck_assert(strstr(d.text, "GPUMEM_GROUP_LIMIT") != NULL);
    ck_assert_str_eq(p.group, "");
    ck_assert_int_eq(p.src[GM_F_GROUP], GM_SRC_DEFAULT);
    LOAD("GPUMEM_GROUP=team", "GPUMEM_GROUP_LIMIT=none");
    expect_error("GPUMEM_GROUP", "team", "has no group limit");
}
END_TEST

START_TEST(group_limit_alone_warns)
{
    LOAD("GPUMEM_GROUP_LIMIT=8G");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(d.errors, 0);
    ck_assert_uint_eq(d.warnings, 1);
    ck_assert(strstr(d.text, "GPUMEM_GROUP_LIMIT is set but GPUMEM_GROUP is "
                     "not") != NULL);
}
END_TEST

/* ---- share and local ranks --------------------------------------------- */

START_TEST(share_ranks)
{
    LOAD("LOCAL_WORLD_SIZE=4", "GPUMEM_LIMIT=share:0.5");
    expect_clean();
    ck_assert_int_eq(p.limit.kind, GM_LIMIT_SHARE);
    ck_assert_uint_eq(p.limit.ranks, 4);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB),
                      80 * GiB / 4 / 2);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 1000), 125);
}
END_TEST

struct rank_case {
    const char *a, *b;
    unsigned ranks;
};

static const struct rank_case rank_cases[] = {
    { "OMPI_COMM_WORLD_LOCAL_SIZE=2", "LOCAL_WORLD_SIZE=4", 4 },
    { "MPI_LOCALNRANKS=3", "OMPI_COMM_WORLD_LOCAL_SIZE=2", 2 },
    { "SLURM_NTASKS_PER_NODE=8", "MPI_LOCALNRANKS=3", 3 },
    { "HOROVOD_LOCAL_SIZE=6", "SLURM_NTASKS_PER_NODE=8", 8 },
    { "HOROVOD_LOCAL_SIZE=6", "PATH=/bin", 6 },
    { "LOCAL_WORLD_SIZE=", "HOROVOD_LOCAL_SIZE=5", 5 },
    { "PATH=/bin", "HOME=/", 1 },
};

START_TEST(share_rank_order)
{
    const struct rank_case *c = &rank_cases[_i];
    char a[64], b[64];

    snprintf(a, sizeof a, "%s", c->a);
    snprintf(b, sizeof b, "%s", c->b);
    LOAD(a, "GPUMEM_LIMIT=share", b);
    expect_clean();
    ck_assert_uint_eq(p.limit.ranks, c->ranks);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 240), 240 / c->ranks);
}
END_TEST

START_TEST(share_bad_ranks)
{
    LOAD("LOCAL_WORLD_SIZE=abc", "GPUMEM_LIMIT=share:0.5",
         "OMPI_COMM_WORLD_LOCAL_SIZE=2");
    ck_assert_int_eq(rc, -1);
    ck_assert_uint_eq(d.errors, 1);
    ck_assert(strstr(d.text, "GPUMEM_LIMIT='share:0.5'") != NULL);
    ck_assert(strstr(d.text, "LOCAL_WORLD_SIZE='abc' is not a whole "
                     "number from 1 to 1000000") != NULL);
    ck_assert_int_eq(p.limit.kind, GM_LIMIT_NONE);
    LOAD("SLURM_NTASKS_PER_NODE=0", "GPUMEM_LIMIT=share");
    ck_assert_int_eq(rc, -1);
    ck_assert(strstr(d.text, "SLURM_NTASKS_PER_NODE='0'") != NULL);
    /* Too many ranks: the message gives the range taken. */
    LOAD("LOCAL_WORLD_SIZE=2000000", "GPUMEM_LIMIT=share");
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(d.text, "LOCAL_WORLD_SIZE='2000000' is not a whole "
                         "number from 1 to 1000000; set it to the ranks on "
                         "this node or unset it") != NULL, "%s", d.text);
    LOAD("LOCAL_WORLD_SIZE=1000000", "GPUMEM_LIMIT=share");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(p.limit.ranks, 1000000);
    /* Without share, rank variables are not read at all. */
    LOAD("LOCAL_WORLD_SIZE=abc", "GPUMEM_LIMIT=4G");
    expect_clean();
}
END_TEST

/* ---- per-device limits ------------------------------------------------- */

START_TEST(device_precedence)
{
    LOAD("GPUMEM_LIMIT=4G", "GPUMEM_LIMIT_1=2G", "GPUMEM_LIMIT_3=none",
         "GPUMEM_LIMIT_5=50%", "GPUMEM_LIMIT_63=1G");
    expect_clean();
    ck_assert_int_eq(p.src[GM_F_LIMIT_N], GM_SRC_ENV);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 4 * GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 1, 80 * GiB), 2 * GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 2, 80 * GiB), 4 * GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 3, 80 * GiB), 0);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 5, 80 * GiB), 40 * GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 63, 80 * GiB), GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 64, 80 * GiB), 4 * GiB);
    ck_assert(p.dev_limit_set[1] && p.dev_limit_set[3] && !p.dev_limit_set[2]);
    /* Without GPUMEM_LIMIT only the listed device is limited. */
    LOAD("GPUMEM_LIMIT_0=1G");
    expect_clean();
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), GiB);
    ck_assert_uint_eq(gm_policy_limit_for(&p, 1, 80 * GiB), 0);
}
END_TEST

static const char *const bad_devices[] = {
    "GPUMEM_LIMIT_X=4G", "GPUMEM_LIMIT_64=4G", "GPUMEM_LIMIT_=4G",
    "GPUMEM_LIMIT_01=4G", "GPUMEM_LIMIT_1a=4G", "GPUMEM_LIMIT_999=4G",
};

START_TEST(device_bad_ordinal)
{
    char var[64], name[64];
    const char *eq;

    snprintf(var, sizeof var, "%s", bad_devices[_i]);
    eq = strchr(var, '=');
    snprintf(name, sizeof name, "%.*s", (int)(eq - var), var);
    LOAD(var);
    expect_error(name, "4G", "which is not a device ordinal from 0 to 63");
    ck_assert(strstr(d.text, "GPUMEM_LIMIT_<N>") != NULL);
}
END_TEST

START_TEST(device_bad_value)
{
    LOAD("GPUMEM_LIMIT_2=4 gigs");
    expect_error("GPUMEM_LIMIT_2", "4 gigs", "is not a size");
    ck_assert(!p.dev_limit_set[2]);
    ck_assert_int_eq(p.src[GM_F_LIMIT_N], GM_SRC_DEFAULT);
}
END_TEST

START_TEST(first_entry_wins)
{
    LOAD("GPUMEM_LIMIT=2G", "GPUMEM_LIMIT=bogus", "GPUMEM_LIMIT_1=1G",
         "GPUMEM_LIMIT_1=bogus");
    expect_clean();
    ck_assert_uint_eq(p.limit.bytes, 2 * GiB);
    ck_assert_uint_eq(p.dev_limit[1].bytes, GiB);
}
END_TEST

/* ---- resolution -------------------------------------------------------- */

START_TEST(resolve_rounding)
{
    struct gm_limit l = { GM_LIMIT_PERCENT, 0, 0.29, 0 };

    ck_assert_uint_eq(gm_limit_resolve(&l, 100), 29);
    l.fraction = 0.5;
    ck_assert_uint_eq(gm_limit_resolve(&l, 3), 1);       /* 1.5 floors */
    ck_assert_uint_eq(gm_limit_resolve(&l, 1), 1);       /* 0.5 -> 1, not 0 */
    l.fraction = 0.125;
    ck_assert_uint_eq(gm_limit_resolve(&l, 80 * GiB), 10 * GiB);
    l.fraction = 1.0;
    ck_assert_uint_eq(gm_limit_resolve(&l, UINT64_MAX), UINT64_MAX);
    l.fraction = 0.333;
    ck_assert_uint_eq(gm_limit_resolve(&l, 1000), 333);
    l.kind = GM_LIMIT_SHARE;
    l.fraction = 1.0;
    l.ranks = 3;
    ck_assert_uint_eq(gm_limit_resolve(&l, 10), 3);
    l.fraction = 0.9;
    l.ranks = 8;
    ck_assert_uint_eq(gm_limit_resolve(&l, 80 * GiB), 9 * GiB);
    l.kind = GM_LIMIT_BYTES;
    l.bytes = 5;
    ck_assert_uint_eq(gm_limit_resolve(&l, 100), 5);
    ck_assert_uint_eq(gm_limit_resolve(&l, 1), 5);       /* not clamped */
    l.kind = GM_LIMIT_NONE;
    ck_assert_uint_eq(gm_limit_resolve(&l, 100), 0);
    /* 0.009% is 8.99999...e-5 as a double: still exactly 90000 of 1e9. */
    LOAD("GPUMEM_LIMIT=0.009%");
    expect_clean();
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 1000000000ull), 90000);
    LOAD("GPUMEM_LIMIT=share:0.011", "LOCAL_WORLD_SIZE=1");
    expect_clean();
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 10000000000ull), 110000000);
    /* The finest percentage and share: one part in a billion, shown as
     * written (never as "0%") and resolved to it. */
    static char out[16384];
    LOAD("GPUMEM_LIMIT=0.0000001%");
    expect_clean();
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 85);
    gm_policy_format(&p, false, out, sizeof out);
    ck_assert_msg(strstr(out, "0.0000001% of physical memory") != NULL, "%s",
                  out);
    LOAD("GPUMEM_LIMIT=share:0.000000001", "LOCAL_WORLD_SIZE=1");
    expect_clean();
    ck_assert_uint_eq(gm_policy_limit_for(&p, 0, 80 * GiB), 85);
}
END_TEST

/* ---- mode and static size ---------------------------------------------- */

START_TEST(mode_forms)
{
    LOAD("GPUMEM_MODE=grow");
    expect_clean();
    ck_assert_int_eq(p.mode, GM_MODE_GROW);
    ck_assert_int_eq(p.src[GM_F_MODE], GM_SRC_ENV);
    LOAD("GPUMEM_MODE=STAGED");
    expect_clean();
    ck_assert_int_eq(p.mode, GM_MODE_STAGED);
    LOAD("GPUMEM_MODE=static", "GPUMEM_LIMIT=4G");
    expect_clean();
    ck_assert_int_eq(p.mode, GM_MODE_STATIC);
    LOAD("GPUMEM_MODE=static", "GPUMEM_LIMIT_2=4G");
    expect_clean();
    ck_assert_int_eq(p.mode, GM_MODE_STATIC);
    LOAD("GPUMEM_MODE=fast");
    expect_error("GPUMEM_MODE", "fast", "is not a mode; use grow, static, "
                 "or staged");
    ck_assert_int_eq(p.mode, GM_MODE_GROW);
    LOAD("GPUMEM_MODE=");
    expect_error("GPUMEM_MODE", "", "is empty");
}
END_TEST

START_TEST(static_needs_limit)
{
    LOAD("GPUMEM_MODE=static");
    expect_error("GPUMEM_MODE", "static", "needs a limit");
    ck_assert_int_eq(p.mode, GM_MODE_GROW);
    ck_assert_int_eq(p.src[GM_F_MODE], GM_SRC_DEFAULT);
    LOAD("GPUMEM_MODE=static", "GPUMEM_LIMIT=none", "GPUMEM_LIMIT_0=0");
    expect_error("GPUMEM_MODE", "static", "needs a limit");
    /* A bad limit is reported once, not again as "needs a limit". */
    LOAD("GPUMEM_MODE=static", "GPUMEM_LIMIT=4 gigs");
    expect_error("GPUMEM_LIMIT", "4 gigs", "is not a size");
    ck_assert_int_eq(p.mode, GM_MODE_GROW);
}
END_TEST

START_TEST(static_size_forms)
{
    LOAD("GPUMEM_MODE=static", "GPUMEM_LIMIT=4G", "GPUMEM_STATIC_SIZE=2G");
    expect_clean();
    ck_assert_int_eq(p.static_size.kind, GM_LIMIT_BYTES);
    ck_assert_uint_eq(p.static_size.bytes, 2 * GiB);
    LOAD("GPUMEM_MODE=static", "GPUMEM_LIMIT=4G", "GPUMEM_STATIC_SIZE=4G");
    expect_clean();
    LOAD("GPUMEM_MODE=static", "GPUMEM_LIMIT=4G", "GPUMEM_STATIC_SIZE=75%");
    expect_clean();
    ck_assert_int_eq(p.static_size.kind, GM_LIMIT_PERCENT);
    ck_assert(p.static_size.fraction == 0.75);
    ck_assert_uint_eq(gm_limit_resolve(&p.static_size,
                                       gm_policy_limit_for(&p, 0, 0)),
                      3 * GiB);
    LOAD("GPUMEM_MODE=static", "GPUMEM_LIMIT=4G", "GPUMEM_STATIC_SIZE=100%");
    expect_clean();
    /* Not checkable against a percentage limit: accepted. */
    LOAD("GPUMEM_MODE=static", "GPUMEM_LIMIT=10%", "GPUMEM_STATIC_SIZE=64G");
    expect_clean();
}
END_TEST

static const struct err_case bad_static[] = {
    { "0%", "is 0% of the limit" },
    { "0.00000001%", "is below 0.0000001% of the limit" },
    { "101%", "is above 100% of the limit" },
    { "0", "is zero" },
    { "", "is empty" },
    { "-1G", "is negative" },
    { "2 G", "is not a size" },
    { "99999999T", "is too large" },
};

START_TEST(static_size_refusals)
{
    const struct err_case *c = &bad_static[_i];
    char var[64];

    snprintf(var, sizeof var, "GPUMEM_STATIC_SIZE=%s", c->v);
    LOAD("GPUMEM_MODE=static", "GPUMEM_LIMIT=4G", var);
    expect_error("GPUMEM_STATIC_SIZE", c->v, c->phrase);
    ck_assert_int_eq(p.static_size.kind, GM_LIMIT_NONE);
}
END_TEST

START_TEST(static_size_above_limit)
{
    LOAD("GPUMEM_MODE=static", "GPUMEM_LIMIT=4G", "GPUMEM_STATIC_SIZE=5G");
    expect_error("GPUMEM_STATIC_SIZE", "5G",
                 "(5.0 GiB) is above GPUMEM_LIMIT='4G' (4.0 GiB)");
    ck_assert_int_eq(p.static_size.kind, GM_LIMIT_NONE);
    ck_assert_int_eq(p.src[GM_F_STATIC_SIZE], GM_SRC_DEFAULT);
    LOAD("GPUMEM_MODE=static", "GPUMEM_LIMIT=8G", "GPUMEM_LIMIT_1=1G",
         "GPUMEM_STATIC_SIZE=2G");
    expect_error("GPUMEM_STATIC_SIZE", "2G", "is above GPUMEM_LIMIT_1='1G'");
}
END_TEST

START_TEST(mode_only_warnings)
{
    LOAD("GPUMEM_WARMUP=30s", "GPUMEM_HEADROOM=20%");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(d.warnings, 2);
    ck_assert(strstr(d.text, "GPUMEM_WARMUP is set but GPUMEM_MODE is grow, "
                     "not staged") != NULL);
    LOAD("GPUMEM_MODE=staged", "GPUMEM_WARMUP=30s", "GPUMEM_HEADROOM=20%");
    expect_clean();
    LOAD("GPUMEM_STATIC_SIZE=1G");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(d.warnings, 1);
}
END_TEST

/* A size without a unit is bytes; one below a mebibyte is almost always
 * a unit left out, and is said so (the value still holds). */
START_TEST(bare_small_sizes_warn)
{
    LOAD("GPUMEM_LIMIT=2");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(d.warnings, 1);
    ck_assert_uint_eq(p.limit.bytes, 2);
    ck_assert(strstr(d.text, "GPUMEM_LIMIT='2' is 2 bytes (a number without "
                     "a unit is bytes)") != NULL);
    ck_assert(strstr(d.text, "write a unit, e.g. 2G or 2M") != NULL);
    LOAD("GPUMEM_LIMIT=2.0"); /* a decimal point is still no unit */
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(d.warnings, 1);
    ck_assert(strstr(d.text, "GPUMEM_LIMIT='2.0' is 2 bytes") != NULL);
    LOAD("GPUMEM_LIMIT=8G", "GPUMEM_LIMIT_1=512", "GPUMEM_GROUP=g",
         "GPUMEM_GROUP_LIMIT=100");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(d.warnings, 2);
    ck_assert(strstr(d.text, "GPUMEM_LIMIT_1='512' is 512 bytes") != NULL);
    ck_assert(strstr(d.text, "GPUMEM_GROUP_LIMIT='100' is 100 bytes") != NULL);
    LOAD("GPUMEM_MODE=static", "GPUMEM_LIMIT=4G", "GPUMEM_STATIC_SIZE=64");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(d.warnings, 1);
    ck_assert(strstr(d.text, "GPUMEM_STATIC_SIZE='64' is 64 bytes") != NULL);
    /* A unit, a mebibyte or more, a percentage: nothing to say. */
    LOAD("GPUMEM_LIMIT=2K");
    expect_clean();
    LOAD("GPUMEM_LIMIT=1048576");
    expect_clean();
    LOAD("GPUMEM_LIMIT=2%");
    expect_clean();
}
END_TEST

/* ---- staged-mode and OOM variables ------------------------------------- */

START_TEST(warmup_forms)
{
    LOAD("GPUMEM_MODE=staged", "GPUMEM_WARMUP=30s");
    expect_clean();
    ck_assert_uint_eq(p.warmup_ns, 30000000000ull);
    LOAD("GPUMEM_MODE=staged", "GPUMEM_WARMUP=5m");
    expect_clean();
    ck_assert_uint_eq(p.warmup_ns, 300000000000ull);
    LOAD("GPUMEM_MODE=staged", "GPUMEM_WARMUP=1500ms");
    expect_clean();
    ck_assert_uint_eq(p.warmup_ns, 1500000000ull);
}
END_TEST

static const struct err_case bad_warmups[] = {
    { "30", "has no unit" },
    { "0s", "is not longer than zero" },
    { "abc", "is not a duration" },
    { "-5s", "is negative" },
    { "", "is empty" },
    { "5 m", "is not a duration" },
    { "5m!", "has unexpected text '!' after '5m'" },
    { "99999999999h", "is too large" },
};

START_TEST(warmup_refusals)
{
    const struct err_case *c = &bad_warmups[_i];
    char var[64];

    snprintf(var, sizeof var, "GPUMEM_WARMUP=%s", c->v);
    LOAD("GPUMEM_MODE=staged", var);
    expect_error("GPUMEM_WARMUP", c->v, c->phrase);
    ck_assert(strstr(d.text, "use a number with ns, us, ms, s, m or h") !=
              NULL);
    ck_assert_uint_eq(p.warmup_ns, 60000000000ull);
}
END_TEST

START_TEST(headroom_forms)
{
    LOAD("GPUMEM_MODE=staged", "GPUMEM_HEADROOM=0%");
    expect_clean();
    ck_assert(p.headroom == 0.0);
    LOAD("GPUMEM_MODE=staged", "GPUMEM_HEADROOM=1000%");
    expect_clean();
    ck_assert(p.headroom == 10.0);
    LOAD("GPUMEM_MODE=staged", "GPUMEM_HEADROOM=12.5%");
    expect_clean();
    ck_assert(p.headroom == 0.125);
    LOAD("GPUMEM_MODE=staged", "GPUMEM_HEADROOM=1000.5%");
    expect_error("GPUMEM_HEADROOM", "1000.5%", "is above 1000%");
    ck_assert(p.headroom == 0.10);
    LOAD("GPUMEM_MODE=staged", "GPUMEM_HEADROOM=10");
    expect_error("GPUMEM_HEADROOM", "10", "is not a percentage");
    LOAD("GPUMEM_MODE=staged", "GPUMEM_HEADROOM=-1%");
    expect_error("GPUMEM_HEADROOM", "-1%", "is negative");
}
END_TEST

START_TEST(on_oom_forms)
{
    LOAD("GPUMEM_ON_OOM=fail");
    expect_clean();
    ck_assert_int_eq(p.on_oom, GM_OOM_FAIL);
    ck_assert_int_eq(p.src[GM_F_ON_OOM], GM_SRC_ENV);
    LOAD("GPUMEM_ON_OOM=wait");
    expect_clean();
    ck_assert_int_eq(p.on_oom, GM_OOM_WAIT);
    ck_assert_uint_eq(p.oom_wait_ns, 60000000000ull);
    LOAD("GPUMEM_ON_OOM=wait:30s");
    expect_clean();
    ck_assert_int_eq(p.on_oom, GM_OOM_WAIT);
    ck_assert_uint_eq(p.oom_wait_ns, 30000000000ull);
    LOAD("GPUMEM_ON_OOM=spill");
    expect_clean();
    ck_assert_int_eq(p.on_oom, GM_OOM_SPILL);
    LOAD("GPUMEM_ON_OOM=WARN");
    expect_clean();
    ck_assert_int_eq(p.on_oom, GM_OOM_WARN);
}
END_TEST

static const struct err_case bad_ooms[] = {
    { "explode", "is not an out-of-memory policy" },
    { "", "is empty" },
    { "wait:", "has a wait duration that is empty" },
    { "wait:5x", "has a wait duration that is not a duration" },
    { "wait:0s", "has a wait duration that is not longer than zero" },
    { "wait:30", "has a wait duration that has no unit" },
    { "wait 30s", "is not an out-of-memory policy" },
};

START_TEST(on_oom_refusals)
{
    const struct err_case *c = &bad_ooms[_i];
    char var[64];

    snprintf(var, sizeof var, "GPUMEM_ON_OOM=%s", c->v);
    LOAD(var);
    expect_error("GPUMEM_ON_OOM", c->v, c->phrase);
    ck_assert(strstr(d.text, "wait:DURATION") != NULL);
    ck_assert_int_eq(p.on_oom, GM_OOM_FAIL);
}
END_TEST

/* ---- names ------------------------------------------------------------- */

START_TEST(group_names)
{
    char name65[80], var[96];

    LOAD("GPUMEM_GROUP=team-a.1_X", "GPUMEM_GROUP_LIMIT=8G");
    expect_clean();
    ck_assert_str_eq(p.group, "team-a.1_X");
    memset(name65, 'g', 65);
    name65[65] = '\0';
    snprintf(var, sizeof var, "GPUMEM_GROUP=%.64s", name65);
    LOAD(var, "GPUMEM_GROUP_LIMIT=8G");
    expect_clean();
    ck_assert_uint_eq(strlen(p.group), 64);
    snprintf(var, sizeof var, "GPUMEM_GROUP=%s", name65);
    LOAD(var, "GPUMEM_GROUP_LIMIT=8G");
    expect_error("GPUMEM_GROUP", name65, "is longer than 64 characters");
    LOAD("GPUMEM_GROUP=a/b", "GPUMEM_GROUP_LIMIT=8G");
    expect_error("GPUMEM_GROUP", "a/b", "contains '/', which is not allowed");
    LOAD("GPUMEM_GROUP=a b", "GPUMEM_GROUP_LIMIT=8G");
    expect_error("GPUMEM_GROUP", "a b", "contains a space");
    LOAD("GPUMEM_GROUP=", "GPUMEM_GROUP_LIMIT=8G");
    expect_error("GPUMEM_GROUP", "", "is empty");
}
END_TEST

START_TEST(prefix_names)
{
    char name33[40], var[64];

    LOAD("GPUMEM_SHM_PREFIX=gm-test.1");
    expect_clean();
    ck_assert_str_eq(p.shm_prefix, "gm-test.1");
    memset(name33, 'p', 33);
    name33[33] = '\0';
    snprintf(var, sizeof var, "GPUMEM_SHM_PREFIX=%.32s", name33);
    LOAD(var);
    expect_clean();
    ck_assert_uint_eq(strlen(p.shm_prefix), 32);
    snprintf(var, sizeof var, "GPUMEM_SHM_PREFIX=%s", name33);
    LOAD(var);
    expect_error("GPUMEM_SHM_PREFIX", name33, "is longer than 32 characters");
    ck_assert_str_eq(p.shm_prefix, "gpumem");
    LOAD("GPUMEM_SHM_PREFIX=../x");
    expect_error("GPUMEM_SHM_PREFIX", "../x", "contains '/'");
    LOAD("GPUMEM_SHM_PREFIX=.hidden");
    expect_error("GPUMEM_SHM_PREFIX", ".hidden", "starts with '.'");
    ck_assert_str_eq(p.shm_prefix, "gpumem");
    LOAD("GPUMEM_SHM_PREFIX=");
    expect_error("GPUMEM_SHM_PREFIX", "", "is empty");
}
END_TEST

/* ---- priority, report, keep, ring, log, library, bad config ------------ */

START_TEST(priority_forms)
{
    LOAD("GPUMEM_PRIORITY=high");
    expect_clean();
    ck_assert(p.priority == 1.5);
    LOAD("GPUMEM_PRIORITY=normal");
    expect_clean();
    ck_assert(p.priority == 1.0);
    LOAD("GPUMEM_PRIORITY=Low");
    expect_clean();
    ck_assert(p.priority == 0.7);
    LOAD("GPUMEM_PRIORITY=0.1");
    expect_clean();
    ck_assert(p.priority == 0.1);
    LOAD("GPUMEM_PRIORITY=10");
    expect_clean();
    ck_assert(p.priority == 10.0);
    LOAD("GPUMEM_PRIORITY=2.5");
    expect_clean();
    ck_assert(p.priority == 2.5);
}
END_TEST

static const struct err_case bad_priorities[] = {
    { "0.09", "is outside 0.1-10" },
    /* Below and above the bounds by less than a double tells apart: they
     * were rounded onto 0.1 and 10 and accepted. */
    { "0.0999999999999999999", "is outside 0.1-10" },
    { "0.09999999999999999999999", "is outside 0.1-10" },
    { "10.00000000000000000001", "is outside 0.1-10" },
    { "10.01", "is outside 0.1-10" },
    { "0", "is outside 0.1-10" },
    { "urgent", "is not a priority" },
    { "-1", "is negative" },
    { "", "is empty" },
    { "2x", "has unexpected text 'x' after '2'" },
};

START_TEST(priority_refusals)
{
    const struct err_case *c = &bad_priorities[_i];
    char var[64];

    snprintf(var, sizeof var, "GPUMEM_PRIORITY=%s", c->v);
    LOAD(var);
    expect_error("GPUMEM_PRIORITY", c->v, c->phrase);
    ck_assert(strstr(d.text, "use high, normal, low, or a weight from 0.1 to "
                     "10") != NULL);
    ck_assert(p.priority == 1.0);
}
END_TEST

START_TEST(report_forms)
{
    static char longpath[GM_PATH_MAX + 64];

    LOAD("GPUMEM_REPORT=0");
    expect_clean();
    ck_assert_int_eq(p.report, GM_REPORT_NONE);
    ck_assert_int_eq(p.src[GM_F_REPORT], GM_SRC_ENV);
    LOAD("GPUMEM_REPORT=1");
    expect_clean();
    ck_assert_int_eq(p.report, GM_REPORT_STDERR);
    LOAD("GPUMEM_REPORT=stderr");
    expect_clean();
    ck_assert_int_eq(p.report, GM_REPORT_STDERR);
    LOAD("GPUMEM_REPORT=json:/tmp/gm.%p.json");
    expect_clean();
    ck_assert_int_eq(p.report, GM_REPORT_JSON);
    ck_assert_str_eq(p.report_path, "/tmp/gm.%p.json");
    LOAD("GPUMEM_REPORT=json:");
    expect_error("GPUMEM_REPORT", "json:", "has an empty path");
    ck_assert_int_eq(p.report, GM_REPORT_NONE);
    LOAD("GPUMEM_REPORT=file");
    expect_error("GPUMEM_REPORT", "file", "is not a report target; use 0, 1, "
                 "stderr, or json:PATH");
    LOAD("GPUMEM_REPORT=");
    expect_error("GPUMEM_REPORT", "", "is empty");
    memcpy(longpath, "GPUMEM_REPORT=json:/", 20);
    memset(longpath + 20, 'a', GM_PATH_MAX);   /* path: 4097 bytes */
    longpath[20 + GM_PATH_MAX] = '\0';
    LOAD(longpath);
    ck_assert_int_eq(rc, -1);
    ck_assert(strstr(d.text, "has a path longer than 4095 bytes") != NULL);
    ck_assert(strstr(d.text, "...'") != NULL);   /* value shortened */
    ck_assert_uint_eq(count_lines(d.text), 1);
}
END_TEST

START_TEST(keep_forms)
{
    LOAD("GPUMEM_KEEP=1");
    expect_clean();
    ck_assert(p.keep);
    LOAD("GPUMEM_KEEP=0");
    expect_clean();
    ck_assert(!p.keep);
    ck_assert_int_eq(p.src[GM_F_KEEP], GM_SRC_ENV);
    LOAD("GPUMEM_KEEP=yes");
    expect_error("GPUMEM_KEEP", "yes", "is not 0 or 1; use 0 or 1");
    LOAD("GPUMEM_KEEP=");
    expect_error("GPUMEM_KEEP", "", "is empty");
}
END_TEST

START_TEST(nvml_view_forms)
{
    LOAD("GPUMEM_LIMIT=1G");
    expect_clean();
    ck_assert(p.nvml_view);
    ck_assert_int_eq(p.src[GM_F_NVML_VIEW], GM_SRC_DEFAULT);
    LOAD("GPUMEM_NVML_VIEW=0");
    expect_clean();
    ck_assert(!p.nvml_view);
    ck_assert_int_eq(p.src[GM_F_NVML_VIEW], GM_SRC_ENV);
    LOAD("GPUMEM_NVML_VIEW=1");
    expect_clean();
    ck_assert(p.nvml_view);
    LOAD("GPUMEM_NVML_VIEW=off");
    expect_error("GPUMEM_NVML_VIEW", "off", "is not 0 or 1; use 1 (NVML shows the limit)");
    ck_assert(p.nvml_view); /* a refused value keeps the default */
    LOAD("GPUMEM_NVML_VIEW=");
    expect_error("GPUMEM_NVML_VIEW", "", "is empty");
}
END_TEST

START_TEST(telemetry_forms)
{
    LOAD("GPUMEM_ON_BAD_CONFIG=exit");
    ck_assert(p.telemetry); /* default on */
    LOAD("GPUMEM_TELEMETRY=0");
    expect_clean();
    ck_assert(!p.telemetry);
    ck_assert_int_eq(p.src[GM_F_TELEMETRY], GM_SRC_ENV);
    LOAD("GPUMEM_TELEMETRY=1");
    expect_clean();
    ck_assert(p.telemetry);
    LOAD("GPUMEM_TELEMETRY=off");
    expect_error("GPUMEM_TELEMETRY", "off", "is not 0 or 1; use 1 (segment, "
                 "stats, events, report) or 0 (limits only)");
    LOAD("GPUMEM_TELEMETRY=");
    expect_error("GPUMEM_TELEMETRY", "", "is empty");
    LOAD("GPUMEM_TELEMETRY=0", "GPUMEM_REPORT=json:/tmp/r.json");
    expect_error("GPUMEM_REPORT", "json:/tmp/r.json",
                 "needs telemetry, but GPUMEM_TELEMETRY=0 turns it off; "
                 "use GPUMEM_TELEMETRY=1, or unset GPUMEM_REPORT");
    ck_assert_int_eq(p.report, GM_REPORT_NONE);
    LOAD("GPUMEM_TELEMETRY=0", "GPUMEM_KEEP=1");
    expect_clean();
}
END_TEST

START_TEST(ring_forms)
{
    LOAD("GPUMEM_RING_EVENTS=1024");
    expect_clean();
    ck_assert_uint_eq(p.ring_events, 1024);
    LOAD("GPUMEM_RING_EVENTS=16777216");
    expect_clean();
    ck_assert_uint_eq(p.ring_events, 16777216);
    LOAD("GPUMEM_RING_EVENTS=131072");
    expect_clean();
    ck_assert_uint_eq(p.ring_events, 131072);
}
END_TEST

static const struct err_case bad_rings[] = {
    { "512", "is outside 1024-16777216" },
    { "1000", "is outside 1024-16777216" },
    { "33554432", "is outside 1024-16777216" },
    { "3000", "is not a power of two" },
    { "16777215", "is not a power of two" },
    { "abc", "is not a whole number" },
    { "1024.5", "is not a whole number" },
    { "64k", "has unexpected text 'k' after '64'" },
    { "", "is empty" },
    { "-1024", "is negative" },
    { "99999999999999999999", "is too large" },
};

START_TEST(ring_refusals)
{
    const struct err_case *c = &bad_rings[_i];
    char var[64];

    snprintf(var, sizeof var, "GPUMEM_RING_EVENTS=%s", c->v);
    LOAD(var);
    expect_error("GPUMEM_RING_EVENTS", c->v, c->phrase);
    ck_assert(strstr(d.text, "use a power of two from 1024 to 16777216") !=
              NULL);
    ck_assert_uint_eq(p.ring_events, 65536);
}
END_TEST

START_TEST(warn_before_forms)
{
    LOAD("PATH=/bin");
    expect_clean();
    ck_assert_uint_eq(p.warn_before_ns, 300000000000ull); /* 5 min */
    LOAD("GPUMEM_WARN_BEFORE=90s");
    expect_clean();
    ck_assert_uint_eq(p.warn_before_ns, 90000000000ull);
    LOAD("GPUMEM_WARN_BEFORE=2h");
    expect_clean();
    ck_assert_uint_eq(p.warn_before_ns, 7200000000000ull);
    LOAD("GPUMEM_WARN_BEFORE=0");
    expect_clean();
    ck_assert_uint_eq(p.warn_before_ns, 0);
    ck_assert_int_eq(p.src[GM_F_WARN_BEFORE], GM_SRC_ENV);
}
END_TEST

static const struct err_case bad_warn_before[] = {
    { "soon", "is not" },
    { "5", "" },
    { "", "is empty" },
    { "-5m", "" },
};

START_TEST(warn_before_refusals)
{
    const struct err_case *c = &bad_warn_before[_i];
    char var[64];

    snprintf(var, sizeof var, "GPUMEM_WARN_BEFORE=%s", c->v);
    LOAD(var);
    expect_error("GPUMEM_WARN_BEFORE", c->v, c->phrase);
    ck_assert(strstr(d.text, "or 0 (no warning)") != NULL);
    ck_assert_uint_eq(p.warn_before_ns, 300000000000ull); /* default kept */
}
END_TEST

START_TEST(log_forms)
{
    static const char *const words[] = { "quiet", "error", "warn", "info",
                                         "debug" };
    char var[64];
    int i;

    for (i = 0; i < 5; i++) {
        snprintf(var, sizeof var, "GPUMEM_LOG_LEVEL=%s", words[i]);
        LOAD(var);
        expect_clean();
        ck_assert_int_eq(p.log_level, (enum gm_log)i);
        ck_assert_str_eq(gm_log_level_name(p.log_level), words[i]);
    }
    LOAD("GPUMEM_LOG_LEVEL=verbose");
    expect_error("GPUMEM_LOG_LEVEL", "verbose", "is not a log level; use "
                 "quiet, error, warn, info, or debug");
    ck_assert_int_eq(p.log_level, GM_LOG_WARN);
}
END_TEST

START_TEST(library_forms)
{
    LOAD("GPUMEM_CUDA_LIBRARY=/opt/sim/libcuda.so.1");
    expect_clean();
    ck_assert_str_eq(p.cuda_library, "/opt/sim/libcuda.so.1");
    LOAD("GPUMEM_CUDA_LIBRARY=");
    expect_error("GPUMEM_CUDA_LIBRARY", "", "is empty");
    ck_assert_str_eq(p.cuda_library, "libcuda.so.1");
}
END_TEST

/* A secure-execution (setuid) load ignores the environment's file and
 * library names, and keeps its limits and other settings. */
START_TEST(secure_load_ignores_paths)
{
    char *env[] = { "GPUMEM_CUDA_LIBRARY=/home/u/evil.so",
                    "GPUMEM_REPORT=json:/etc/shadow",
                    "GPUMEM_RECORD=/home/u/rec",
                    "GPUMEM_SHM_DIR=/home/u/shm",
                    "GPUMEM_SHM_PREFIX=mine",
                    "GPUMEM_LIMIT=2G", "GPUMEM_ON_OOM=wait", NULL };
    rc = gm_policy_load_secure(&p, env, NULL, true, &d);
    expect_clean();
    ck_assert_str_eq(p.cuda_library, "libcuda.so.1");
    ck_assert_int_eq(p.report, GM_REPORT_NONE);
    ck_assert_str_eq(p.record_dir, "");
    ck_assert_str_eq(p.shm_dir, "/dev/shm");
    ck_assert_str_eq(p.shm_prefix, "gpumem");
    ck_assert_int_eq(p.src[GM_F_CUDA_LIBRARY], GM_SRC_DEFAULT);
    ck_assert(p.secure_ignored[GM_F_CUDA_LIBRARY]);
    ck_assert(p.secure_ignored[GM_F_REPORT]);
    ck_assert(p.secure_ignored[GM_F_RECORD]);
    ck_assert(p.secure_ignored[GM_F_SHM_DIR]);
    ck_assert(p.secure_ignored[GM_F_SHM_PREFIX]);
    ck_assert(!p.secure_ignored[GM_F_LIMIT]);
    ck_assert_int_eq(p.limit.kind, GM_LIMIT_BYTES);
    ck_assert_uint_eq(p.limit.bytes, 2 * GiB);
    ck_assert_int_eq(p.on_oom, GM_OOM_WAIT);
    /* A report on standard error names no file: kept. */
    char *env2[] = { "GPUMEM_REPORT=stderr", NULL };
    rc = gm_policy_load_secure(&p, env2, NULL, true, &d);
    expect_clean();
    ck_assert_int_eq(p.report, GM_REPORT_STDERR);
    ck_assert(!p.secure_ignored[GM_F_REPORT]);
    /* Not secure: every value applies. */
    rc = gm_policy_load_secure(&p, env, NULL, false, &d);
    expect_clean();
    ck_assert_str_eq(p.cuda_library, "/home/u/evil.so");
    ck_assert_int_eq(p.report, GM_REPORT_JSON);
    ck_assert(!p.secure_ignored[GM_F_CUDA_LIBRARY]);
}
END_TEST

START_TEST(shm_dir_forms)
{
    /* The identity variables are gpumem's, not typos. */
    LOAD("HOME=/root", "GPUMEM_POD_NAME=p", "GPUMEM_POD_NAMESPACE=n",
         "GPUMEM_CONTAINER_NAME=c");
    expect_clean();
    ck_assert_str_eq(p.shm_dir, "/dev/shm");
    LOAD("GPUMEM_SHM_DIR=/run/gpumem");
    expect_clean();
    ck_assert_str_eq(p.shm_dir, "/run/gpumem");
    LOAD("GPUMEM_SHM_DIR=//run//gpumem///");
    expect_clean();
    ck_assert_str_eq(p.shm_dir, "/run/gpumem");
    LOAD("GPUMEM_SHM_DIR=/");
    expect_clean();
    ck_assert_str_eq(p.shm_dir, "/");
    LOAD("GPUMEM_SHM_DIR=run/gpumem");
    expect_error("GPUMEM_SHM_DIR", "run/gpumem", "is not an absolute path");
    ck_assert_str_eq(p.shm_dir, "/dev/shm");
    LOAD("GPUMEM_SHM_DIR=");
    expect_error("GPUMEM_SHM_DIR", "", "is empty");
    LOAD("GPUMEM_SHM_DIR=/dev/shm/../tmp");
    expect_error("GPUMEM_SHM_DIR", "/dev/shm/../tmp",
                 "has a . or .. component");
    LOAD("GPUMEM_SHM_DIR=/a/./b");
    expect_error("GPUMEM_SHM_DIR", "/a/./b", "has a . or .. component");
    LOAD("GPUMEM_SHM_DIR=/a b");
    expect_error("GPUMEM_SHM_DIR", "/a b", "contains a space");
    char var[300];
    memset(var, 0, sizeof var);
    int n = snprintf(var, sizeof var, "GPUMEM_SHM_DIR=/");
    memset(var + n, 'd', 160);  /* "/" + 160 bytes: one too many */
    LOAD(var);
    ck_assert_int_eq(rc, -1);     /* the message shows the value cut */
    ck_assert_ptr_nonnull(strstr(d.text, "GPUMEM_SHM_DIR='/ddd"));
    ck_assert_ptr_nonnull(strstr(d.text, "is too long; use an absolute"));
    var[n + 159] = '\0';         /* exactly 160 */
    LOAD(var);
    expect_clean();
    ck_assert_uint_eq(strlen(p.shm_dir), 160);
}
END_TEST

START_TEST(bad_config_forms)
{
    LOAD("GPUMEM_ON_BAD_CONFIG=warn");
    expect_clean();
    ck_assert_int_eq(p.on_bad_config, GM_BAD_WARN);
    LOAD("GPUMEM_ON_BAD_CONFIG=exit");
    expect_clean();
    ck_assert_int_eq(p.on_bad_config, GM_BAD_EXIT);
    LOAD("GPUMEM_ON_BAD_CONFIG=ignore");
    expect_error("GPUMEM_ON_BAD_CONFIG", "ignore", "use exit or warn");
    ck_assert_int_eq(p.on_bad_config, GM_BAD_EXIT);
}
END_TEST

START_TEST(warn_keeps_good_values)
{
    LOAD("GPUMEM_ON_BAD_CONFIG=warn", "GPUMEM_LIMIT=lots",
         "GPUMEM_MODE=staged", "GPUMEM_RING_EVENTS=3");
    ck_assert_int_eq(rc, -1);
    ck_assert_uint_eq(d.errors, 2);
    ck_assert_int_eq(p.on_bad_config, GM_BAD_WARN);
    ck_assert_int_eq(p.limit.kind, GM_LIMIT_NONE);
    ck_assert_uint_eq(p.ring_events, 65536);
    ck_assert_int_eq(p.mode, GM_MODE_STAGED);
    ck_assert_int_eq(p.src[GM_F_MODE], GM_SRC_ENV);
    ck_assert_int_eq(p.src[GM_F_LIMIT], GM_SRC_DEFAULT);
}
END_TEST

/* Under warn a refused limit says what holds instead, on a line that
 * goes with the errors (printed at every log level) and counts as
 * neither; under exit (the process stops) nothing more is said. */
START_TEST(warn_says_what_a_refused_limit_leaves)
{
    static char errs[GM_DIAG_BYTES];
    static const char none[] = "gpumem: GPUMEM_ON_BAD_CONFIG=warn: this "
                               "process runs without GPUMEM_LIMIT: no memory "
                               "limit\n";

    LOAD("GPUMEM_ON_BAD_CONFIG=warn", "GPUMEM_LIMIT=4G5");
    ck_assert_int_eq(rc, -1);
    ck_assert_uint_eq(d.errors, 1);
    ck_assert_uint_eq(d.warnings, 0);
    ck_assert_msg(strstr(d.text, none) != NULL, "%s", d.text);
    gm_diag_errors_only(&d, errs, sizeof errs);
    ck_assert_msg(strstr(errs, none) != NULL, "%s", errs);
    LOAD("GPUMEM_LIMIT=4G5");
    ck_assert_uint_eq(count_lines(d.text), 1);
    LOAD("GPUMEM_ON_BAD_CONFIG=warn", "GPUMEM_LIMIT=4G", "GPUMEM_LIMIT_1=2X");
    ck_assert_msg(strstr(d.text, "gpumem: GPUMEM_ON_BAD_CONFIG=warn: this "
                         "process runs without GPUMEM_LIMIT_1: on device 1, "
                         "the limit is GPUMEM_LIMIT='4G' (4.0 GiB)\n"),
                  "%s", d.text);
    LOAD("GPUMEM_ON_BAD_CONFIG=warn", "GPUMEM_LIMIT=50%", "GPUMEM_LIMIT_1=2X");
    ck_assert_msg(strstr(d.text, "on device 1, the limit is 50% of physical "
                         "memory (the job's)\n"), "%s", d.text);
    LOAD("GPUMEM_ON_BAD_CONFIG=warn", "GPUMEM_GROUP=team",
         "GPUMEM_GROUP_LIMIT=lots", "GPUMEM_LIMIT=1G");
    ck_assert_msg(strstr(d.text, "gpumem: GPUMEM_ON_BAD_CONFIG=warn: this "
                         "process runs without GPUMEM_GROUP: it joins no "
                         "group, and only its own limit holds\n"),
                  "%s", d.text);
    /* Other refused variables keep their documented default. */
    LOAD("GPUMEM_ON_BAD_CONFIG=warn", "GPUMEM_MODE=fast");
    ck_assert_uint_eq(count_lines(d.text), 1);
}
END_TEST

/* ---- messages ---------------------------------------------------------- */

START_TEST(value_sanitised)
{
    LOAD("GPUMEM_MODE=gr\now\t");
    expect_error("GPUMEM_MODE", "gr?ow?", "is not a mode");
}
END_TEST

START_TEST(unknown_suggestions)
{
    LOAD("GPUMEM_LIMT=4G");
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(d.errors, 0);
    ck_assert_uint_eq(d.warnings, 1);
    ck_assert_str_eq(d.text, "gpumem: unknown variable GPUMEM_LIMT; did you "
                     "mean GPUMEM_LIMIT?\n");
    ck_assert_int_eq(p.limit.kind, GM_LIMIT_NONE);
    LOAD("GPUMEM_RING_EVENT=1024");
    ck_assert(strstr(d.text, "did you mean GPUMEM_RING_EVENTS?") != NULL);
    LOAD("GPUMEM_MDOE=grow");
    ck_assert(strstr(d.text, "did you mean GPUMEM_MODE?") != NULL);
    LOAD("GPUMEM_REPROT=1");
    ck_assert(strstr(d.text, "did you mean GPUMEM_REPORT?") != NULL);
    LOAD("GPUMEM_limit=4G");
    ck_assert(strstr(d.text, "did you mean GPUMEM_LIMIT?") != NULL);
    LOAD("GPUMEM_LIMT_1=4G");
    ck_assert(strstr(d.text, "did you mean GPUMEM_LIMIT_1?") != NULL);
    LOAD("GPUMEM_GROUPLIMIT=4G");
    ck_assert(strstr(d.text, "did you mean GPUMEM_GROUP_LIMIT?") != NULL);
    LOAD("GPUMEM_XYZZY_PLUGH=1");
    ck_assert_uint_eq(d.warnings, 1);
    ck_assert(strstr(d.text, "unknown variable GPUMEM_XYZZY_PLUGH (ignored)")
              != NULL);
    ck_assert(strstr(d.text, "did you mean") == NULL);
    /* Other prefixes are not ours. */
    LOAD("GPUMEMX=1", "XGPUMEM_LIMIT=1", "GPUMEM_NOEQUALS");
    expect_clean();
}
END_TEST

START_TEST(closest_name)
{
    static const char *const names[] = { "alpha", "beta", "gamma", NULL };
    char longw[80];

    ck_assert_str_eq(gm_closest_name("alpah", names, 3, 2), "alpha");
    ck_assert_str_eq(gm_closest_name("BETA", names, 3, 0), "beta");
    ck_assert_str_eq(gm_closest_name("gama", names, 4, 1), "gamma");
    ck_assert_ptr_null(gm_closest_name("zzzzz", names, 3, 2));
    ck_assert_ptr_null(gm_closest_name("gmaam", names, 3, 1));
    memset(longw, 'a', 70);
    longw[70] = '\0';
    ck_assert_ptr_null(gm_closest_name(longw, names, 3, 100));
    ck_assert_ptr_null(gm_closest_name("alpha", names, 0, 2));
}
END_TEST

START_TEST(diag_overflow)
{
    static char vars[400][48];
    static char *env[401];
    unsigned i;

    for (i = 0; i < 400; i++) {
        snprintf(vars[i], sizeof vars[i], "GPUMEM_QQQQQQQQQQQQ_%u=1", i);
        env[i] = vars[i];
    }
    env[400] = NULL;
    rc = gm_policy_load(&p, env, &d);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(d.warnings, 400);
    ck_assert_uint_lt(d.len, sizeof d.text);
    ck_assert_uint_eq(strlen(d.text), d.len);
    ck_assert(strstr(d.text, "GPUMEM_QQQQQQQQQQQQ_0 ") != NULL);
    ck_assert(strstr(d.text, "GPUMEM_QQQQQQQQQQQQ_399 ") == NULL);
    ck_assert_str_eq(d.text + d.len - strlen("gpumem: (further messages "
                                             "dropped)\n"),
                     "gpumem: (further messages dropped)\n");
}
END_TEST

/* The lines a log level below warn prints: the errors only, in order;
 * past the line table, the "dropped" marker. */
START_TEST(diag_errors_only)
{
    static char out[GM_DIAG_BYTES];

    LOAD("GPUMEM_FOO=1", "GPUMEM_LIMIT=4 gigs", "GPUMEM_MODE=fast",
         "GPUMEM_BAR=2");
    ck_assert_uint_eq(d.errors, 2);
    ck_assert_uint_eq(d.lines, 4);
    size_t n = gm_diag_errors_only(&d, out, sizeof out);
    ck_assert_uint_eq(n, strlen(out));
    ck_assert_uint_eq(count_lines(out), 2);
    ck_assert_msg(strncmp(out, "gpumem: GPUMEM_LIMIT='4 gigs' is not a size",
                          43) == 0 && strstr(out, "GPUMEM_MODE='fast'") &&
                  strstr(out, "GPUMEM_FOO") == NULL, "%s", out);
    LOAD("GPUMEM_FOO=1");
    ck_assert_uint_eq(gm_diag_errors_only(&d, out, sizeof out), 0);
    ck_assert_str_eq(out, "");
    /* A small buffer takes whole lines only. */
    LOAD("GPUMEM_LIMIT=4 gigs");
    ck_assert_uint_eq(gm_diag_errors_only(&d, out, 20), 0);
}
END_TEST

/* ---- output ------------------------------------------------------------ */

/* The text line for `name`, copied into buf (without '\n'). */
static const char *text_line(const char *out, const char *name, char *buf,
                             size_t cap)
{
    size_t n = strlen(name);
    const char *s = out;

    while (s && *s) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (strncmp(s, name, n) == 0 && s[n] == ' ') {
            snprintf(buf, cap, "%.*s", (int)len, s);
            return buf;
        }
        s = e ? e + 1 : NULL;
    }
    return NULL;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

START_TEST(format_text)
{
    static char out[16384];
    char line[256];
    size_t n;

    LOAD("GPUMEM_LIMIT=4G", "GPUMEM_LIMIT_1=50%", "GPUMEM_ON_OOM=wait:30s");
    n = gm_policy_format(&p, false, out, sizeof out);
    ck_assert_uint_eq(n, strlen(out));
    ck_assert_ptr_nonnull(text_line(out, "GPUMEM_LIMIT", line, sizeof line));
    ck_assert(strstr(line, "4.0 GiB (4294967296 B)") != NULL);
    ck_assert(ends_with(line, " env"));
    ck_assert_ptr_nonnull(text_line(out, "GPUMEM_LIMIT_1", line, sizeof line));
    ck_assert(strstr(line, "50% of physical memory") != NULL);
    ck_assert(ends_with(line, " env"));
    ck_assert_ptr_nonnull(text_line(out, "GPUMEM_ON_OOM", line, sizeof line));
    ck_assert(strstr(line, "wait:30s") != NULL);
    ck_assert_ptr_nonnull(text_line(out, "GPUMEM_MODE", line, sizeof line));
    ck_assert(strstr(line, " grow ") != NULL);
    ck_assert(ends_with(line, " default"));
    ck_assert_ptr_nonnull(text_line(out, "GPUMEM_WARMUP", line, sizeof line));
    ck_assert(strstr(line, " 60s ") != NULL);
    /* One line per variable (LIMIT_1 stands for GPUMEM_LIMIT_<N>), one
     * per admin rule, and the admin file's. */
    ck_assert_uint_eq(count_lines(out), GM_F_COUNT + GM_R_COUNT + 1);
    ck_assert_ptr_null(text_line(out, "GPUMEM_LIMIT_<N>", line, sizeof line));
    LOAD("PATH=/bin");
    gm_policy_format(&p, false, out, sizeof out);
    ck_assert_ptr_nonnull(text_line(out, "GPUMEM_LIMIT_<N>", line,
                                    sizeof line));
    ck_assert(ends_with(line, " default"));
}
END_TEST

START_TEST(format_truncates)
{
    char small[40];
    static char big[16384];
    size_t need, got;

    LOAD("GPUMEM_LIMIT=4G");
    need = gm_policy_format(&p, false, big, sizeof big);
    got = gm_policy_format(&p, false, small, sizeof small);
    ck_assert_uint_eq(got, need);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    ck_assert(strncmp(small, big, sizeof small - 1) == 0);
    ck_assert_uint_eq(gm_policy_format(&p, true, NULL, 0),
                      gm_policy_format(&p, true, big, sizeof big));
}
END_TEST

/* The JSON object of `name` (from its key to the next '}'), into buf. */
static const char *json_obj(const char *out, const char *name, char *buf,
                            size_t cap)
{
    char key[80];
    const char *s, *e;

    snprintf(key, sizeof key, "\"%s\": {", name);
    s = strstr(out, key);
    if (s == NULL)
        return NULL;
    e = strchr(s, '}');
    snprintf(buf, cap, "%.*s", (int)(e - s + 1), s);
    return buf;
}

START_TEST(format_json)
{
    static char out[32768];
    char obj[512];

    LOAD("GPUMEM_LIMIT=4G", "GPUMEM_LIMIT_2=share:0.5", "LOCAL_WORLD_SIZE=4",
         "GPUMEM_REPORT=json:/tmp/a\"b\\c.json", "GPUMEM_LIMT=1");
    ck_assert_int_eq(rc, 0);
    gm_policy_format_ex(&p, &d, true, out, sizeof out);
    ck_assert_int_eq(out[0], '{');
    ck_assert_ptr_nonnull(json_obj(out, "GPUMEM_LIMIT", obj, sizeof obj));
    ck_assert(strstr(obj, "\"bytes\": 4294967296") != NULL);
    ck_assert(strstr(obj, "\"source\": \"env\"") != NULL);
    ck_assert_ptr_nonnull(json_obj(out, "GPUMEM_LIMIT_2", obj, sizeof obj));
    ck_assert(strstr(obj, "\"kind\": \"share\", \"fraction\": 0.5, "
                     "\"ranks\": 4") != NULL);
    ck_assert_ptr_nonnull(json_obj(out, "GPUMEM_MODE", obj, sizeof obj));
    ck_assert(strstr(obj, "\"value\": \"grow\"") != NULL);
    ck_assert(strstr(obj, "\"source\": \"default\"") != NULL);
    ck_assert_ptr_nonnull(json_obj(out, "GPUMEM_GROUP", obj, sizeof obj));
    ck_assert(strstr(obj, "\"value\": null") != NULL);
    ck_assert_ptr_nonnull(json_obj(out, "GPUMEM_REPORT", obj, sizeof obj));
    ck_assert(strstr(obj, "\"json:/tmp/a\\\"b\\\\c.json\"") != NULL);
    ck_assert(strstr(obj, "\"source\": \"env\"") != NULL);
    ck_assert(strstr(out, "\"valid\": true") != NULL);
    ck_assert(strstr(out, "\"gpumem: unknown variable GPUMEM_LIMT; did you "
                     "mean GPUMEM_LIMIT?\"") != NULL);
    ck_assert(ends_with(out, "}\n"));
    ck_assert(strstr(out, "GPUMEM_LIMIT_<N>") == NULL);

    LOAD("GPUMEM_LIMIT=4 gigs");
    gm_policy_format_ex(&p, &d, true, out, sizeof out);
    ck_assert(strstr(out, "\"valid\": false") != NULL);
    ck_assert(strstr(out, "GPUMEM_LIMIT='4 gigs' is not a size") != NULL);
    ck_assert_ptr_nonnull(json_obj(out, "GPUMEM_LIMIT", obj, sizeof obj));
    ck_assert(strstr(obj, "\"source\": \"default\"") != NULL);
    /* Without diagnostics, no "valid" member. */
    gm_policy_format(&p, true, out, sizeof out);
    ck_assert(strstr(out, "\"valid\"") == NULL);
}
END_TEST

START_TEST(summary)
{
    char buf[256];
    size_t n;

    LOAD("GPUMEM_LIMIT=4G");
    n = gm_policy_summary(&p, buf, sizeof buf);
    ck_assert_str_eq(buf, "limit=4.0GiB mode=grow on_oom=fail");
    ck_assert_uint_eq(n, strlen(buf));
    LOAD("PATH=/");
    gm_policy_summary(&p, buf, sizeof buf);
    ck_assert_str_eq(buf, "limit=none mode=grow on_oom=fail");
    LOAD("GPUMEM_LIMIT=50%", "GPUMEM_MODE=staged", "GPUMEM_ON_OOM=wait:30s",
         "GPUMEM_LIMIT_1=1G", "GPUMEM_GROUP=g1", "GPUMEM_GROUP_LIMIT=8G",
         "GPUMEM_PRIORITY=high");
    gm_policy_summary(&p, buf, sizeof buf);
    ck_assert_str_eq(buf, "limit=50% mode=staged on_oom=wait:30s "
                     "dev_limits=1 group=g1 group_limit=8.0GiB priority=1.5");
    ck_assert_uint_eq(gm_policy_summary(&p, buf, 8), strlen("limit=50% mode="
                      "staged on_oom=wait:30s dev_limits=1 group=g1 "
                      "group_limit=8.0GiB priority=1.5"));
    ck_assert_str_eq(buf, "limit=5");
}
END_TEST

START_TEST(names)
{
    size_t n = 0, i;
    const char *const *v = gm_policy_var_names(&n);

    ck_assert_uint_eq(n, GM_F_COUNT);
    for (i = 0; i < n; i++)
        ck_assert(strncmp(v[i], "GPUMEM_", 7) == 0);
    ck_assert_str_eq(v[GM_F_RING_EVENTS], "GPUMEM_RING_EVENTS");
    ck_assert_str_eq(gm_mode_name(GM_MODE_STAGED), "staged");
    ck_assert_str_eq(gm_on_oom_name(GM_OOM_SPILL), "spill");
    ck_assert_str_eq(gm_report_name(GM_REPORT_JSON), "json");
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *policy_suite(void)
{
    Suite *s = suite_create("policy");
    TCase *t = tcase_create("limits");

    tcase_add_test(t, defaults);
    tcase_add_test(t, warn_before_forms);
    tcase_add_loop_test(t, warn_before_refusals, 0, N(bad_warn_before));
    tcase_add_test(t, no_getenv);
    tcase_add_loop_test(t, limit_forms, 0, N(good_limits));
    tcase_add_loop_test(t, limit_refusals, 0, N(bad_limits));
    tcase_add_test(t, limit_example_message);
    tcase_add_test(t, group_limit_forms);
    tcase_add_test(t, group_needs_limit);
    tcase_add_test(t, group_limit_alone_warns);
    tcase_add_test(t, share_ranks);
    tcase_add_loop_test(t, share_rank_order, 0, N(rank_cases));
    tcase_add_test(t, share_bad_ranks);
    tcase_add_test(t, device_precedence);
    tcase_add_loop_test(t, device_bad_ordinal, 0, N(bad_devices));
    tcase_add_test(t, device_bad_value);
    tcase_add_test(t, first_entry_wins);
    tcase_add_test(t, resolve_rounding);
    suite_add_tcase(s, t);

    t = tcase_create("modes");
    tcase_add_test(t, mode_forms);
    tcase_add_test(t, static_needs_limit);
    tcase_add_test(t, static_size_forms);
    tcase_add_loop_test(t, static_size_refusals, 0, N(bad_static));
    tcase_add_test(t, static_size_above_limit);
    tcase_add_test(t, mode_only_warnings);
    tcase_add_test(t, bare_small_sizes_warn);
    tcase_add_test(t, warmup_forms);
    tcase_add_loop_test(t, warmup_refusals, 0, N(bad_warmups));
    tcase_add_test(t, headroom_forms);
    tcase_add_test(t, on_oom_forms);
    tcase_add_loop_test(t, on_oom_refusals, 0, N(bad_ooms));
    suite_add_tcase(s, t);

    t = tcase_create("others");
    tcase_add_test(t, group_names);
    tcase_add_test(t, prefix_names);
    tcase_add_test(t, priority_forms);
    tcase_add_loop_test(t, priority_refusals, 0, N(bad_priorities));
    tcase_add_test(t, report_forms);
    tcase_add_test(t, keep_forms);
    tcase_add_test(t, nvml_view_forms);
    tcase_add_test(t, telemetry_forms);
    tcase_add_test(t, ring_forms);
    tcase_add_loop_test(t, ring_refusals, 0, N(bad_rings));
    tcase_add_test(t, log_forms);
    tcase_add_test(t, library_forms);
    tcase_add_test(t, bad_config_forms);
    tcase_add_test(t, shm_dir_forms);
    tcase_add_test(t, warn_keeps_good_values);
    tcase_add_test(t, warn_says_what_a_refused_limit_leaves);
    suite_add_tcase(s, t);

    t = tcase_create("messages");
    tcase_add_test(t, value_sanitised);
    tcase_add_test(t, unknown_suggestions);
    tcase_add_test(t, closest_name);
    tcase_add_test(t, diag_overflow);
    tcase_add_test(t, diag_errors_only);
    suite_add_tcase(s, t);

    t = tcase_create("output");
    tcase_add_test(t, format_text);
    tcase_add_test(t, format_truncates);
    tcase_add_test(t, format_json);
    tcase_add_test(t, summary);
    tcase_add_test(t, names);
    tcase_add_test(t, secure_load_ignores_paths);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(policy_suite());
    int failed;

    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
