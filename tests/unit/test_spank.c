/*
 * tests/unit/test_spank.c — Check suite for tools/spank/jobspec.c, the
 * Slurm plugin's decisions without Slurm: --gpu-mem and --gpu-mem-policy
 * values and their refusals, the plugstack.conf arguments, the ceiling
 * (same unit: clamped; other unit: the group limit), and the variables a
 * task gets, each of which the library's own loader must accept with the
 * meaning intended. The plugin in a real Slurm: tests/servers/test_slurm.sh.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "tools/spank/jobspec.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)
#define N(a) (sizeof(a) / sizeof((a)[0]))

static char err[GM_SPANK_ERR_MAX];

static struct gm_spank_site site_of(const char *args)
{
    static struct gm_spank_site s;
    char buf[512], *av[16], *save = NULL, *w;
    int ac = 0;

    snprintf(buf, sizeof buf, "%s", args);
    for (w = strtok_r(buf, " ", &save); w != NULL && ac < 16;
         w = strtok_r(NULL, " ", &save))
        av[ac++] = w;
    err[0] = '\0';
    ck_assert_msg(gm_spank_site_parse(&s, ac, av, err, sizeof err) == 0,
                  "site '%s' refused: %s", args, err);
    return s;
}

static const char *var(const struct gm_spank_var *v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return v[i].value;
    return NULL;
}

/* ---- --gpu-mem ------------------------------------------------------------ */

START_TEST(mem_forms)
{
    struct gm_limit l;

    ck_assert_int_eq(gm_spank_mem_parse("--gpu-mem", "64M", &l, err, sizeof err), 0);
    ck_assert_int_eq(l.kind, GM_LIMIT_BYTES);
    ck_assert_uint_eq(l.bytes, 64 * MiB);
    ck_assert_int_eq(gm_spank_mem_parse("--gpu-mem", "12.5%", &l, err, sizeof err), 0);
    ck_assert_int_eq(l.kind, GM_LIMIT_PERCENT);
    ck_assert(l.fraction > 0.1249 && l.fraction < 0.1251);
    ck_assert_int_eq(gm_spank_mem_parse("--gpu-mem", "share", &l, err, sizeof err), 0);
    ck_assert_int_eq(l.kind, GM_LIMIT_SHARE);
    ck_assert(l.fraction == 1.0);
    ck_assert_int_eq(gm_spank_mem_parse("--gpu-mem", "share:0.5", &l, err, sizeof err), 0);
    ck_assert(l.fraction == 0.5);
    ck_assert_int_eq(gm_spank_mem_parse("--gpu-mem", "none", &l, err, sizeof err), 0);
    ck_assert_int_eq(l.kind, GM_LIMIT_NONE);
}
END_TEST

static const struct { const char *v, *why; } bad_mem[] = {
    { "bogus", "--gpu-mem='bogus' is not a size; use SIZE" },
    { "150%", "--gpu-mem='150%' is above 100% of the device's memory; use SIZE" },
    { "share:2", "--gpu-mem='share:2' has a share fraction outside (0, 1]; use" },
    { "0.5", "--gpu-mem='0.5' is a fraction of a byte (did you mean 50%?" },
    { "-1G", "--gpu-mem='-1G' is negative; use" },
    { "", "--gpu-mem needs a value; use SIZE" },
    { "6 4M", "--gpu-mem='6 4M' contains a space or control character; use" },
    { "64Q", "--gpu-mem='64Q' " },
    /* reasons that quote text of their own (the last quote before "; use"
     * was taken for the value's end: "--gpu-mem='2Gi' after '2G'") */
    { "2Gi", "--gpu-mem='2Gi' has unexpected text 'i' after '2G'; use SIZE" },
    { "share:0.5,1", "--gpu-mem='share:0.5,1' has a share fraction that has unexpected text ',1' after '0.5'; use" },
};

START_TEST(mem_refused)
{
    struct gm_limit l = { GM_LIMIT_BYTES, 7, 0, 0 };

    err[0] = '\0';
    ck_assert_int_eq(gm_spank_mem_parse("--gpu-mem", bad_mem[_i].v, &l, err,
                                        sizeof err), -1);
    ck_assert_msg(strstr(err, bad_mem[_i].why) != NULL, "'%s': %s",
                  bad_mem[_i].v, err);
    /* Every refusal names all the accepted forms. */
    ck_assert_ptr_nonnull(strstr(err, gm_spank_mem_forms));
    ck_assert_uint_eq(l.bytes, 7);  /* untouched */
}
END_TEST

START_TEST(mem_too_long)
{
    static char v[400];
    struct gm_limit l;

    memset(v, '9', sizeof v - 2);
    v[sizeof v - 2] = 'M';
    ck_assert_int_eq(gm_spank_mem_parse("--gpu-mem", v, &l, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "is longer than") != NULL, "%s", err);
    ck_assert(strlen(err) < sizeof err - 1);
}
END_TEST

/* ---- --gpu-mem-policy ----------------------------------------------------- */

START_TEST(policy_forms)
{
    struct gm_spank_pol p;
    unsigned all = GM_SPANK_OOM_ALL;

    memset(&p, 0, sizeof p);
    ck_assert_int_eq(gm_spank_pol_parse("--gpu-mem-policy",
        "mode=static,on-oom=wait:30s", all, &p, err, sizeof err), 0);
    ck_assert(p.mode_set && p.mode == GM_MODE_STATIC);
    ck_assert(p.on_oom_set && p.on_oom == GM_OOM_WAIT);
    ck_assert_str_eq(p.on_oom_text, "wait:30s");
    memset(&p, 0, sizeof p);
    ck_assert_int_eq(gm_spank_pol_parse("--gpu-mem-policy", "on_oom=fail",
        all, &p, err, sizeof err), 0);
    ck_assert(!p.mode_set && p.on_oom == GM_OOM_FAIL);
}
END_TEST

static const struct { const char *v, *why; } bad_pol[] = {
    { "mode=fast", "--gpu-mem-policy: mode='fast' is not a mode; use KEY=VALUE" },
    { "on-oom=wait:5x", "on-oom='wait:5x' has a wait duration that is not a duration" },
    { "on-oom=wait:30sx", "on-oom='wait:30sx' has a wait duration that has unexpected text 'x' after '30s'" },
    { "speed=1", "--gpu-mem-policy: unknown key 'speed'; use KEY=VALUE" },
    { "static", "--gpu-mem-policy: 'static' is not KEY=VALUE" },
    { "mode=grow,", NULL },     /* a trailing comma is harmless */
    /* a key twice, and commas alone (last-wins and "nothing" before) */
    { "mode=grow,mode=static", "--gpu-mem-policy='mode=grow,mode=static' gives mode twice; give each key once; use KEY=VALUE" },
    { "on-oom=fail,on_oom=wait", "gives on-oom twice; give each key once" },
    { ",", "--gpu-mem-policy=',' names no KEY=VALUE; use KEY=VALUE" },
    { ",,", "names no KEY=VALUE" },
    { "", "--gpu-mem-policy='' is empty" },
    { "on-oom=warn", "--gpu-mem-policy: on-oom=warn is not allowed on this cluster; use fail, wait" },
    { "on-oom=spill", "on-oom=spill is not allowed on this cluster; use fail, wait" },
};

START_TEST(policy_refused)
{
    struct gm_spank_pol p;
    unsigned allow = GM_SPANK_OOM_BIT(GM_OOM_FAIL) | GM_SPANK_OOM_BIT(GM_OOM_WAIT);
    int rc;

    memset(&p, 0, sizeof p);
    err[0] = '\0';
    rc = gm_spank_pol_parse("--gpu-mem-policy", bad_pol[_i].v, allow, &p, err,
                            sizeof err);
    if (bad_pol[_i].why == NULL) {
        ck_assert_msg(rc == 0, "'%s': %s", bad_pol[_i].v, err);
        return;
    }
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(err, bad_pol[_i].why) != NULL, "'%s': %s",
                  bad_pol[_i].v, err);
    ck_assert(!p.mode_set && !p.on_oom_set);
}
END_TEST

/* ---- plugstack.conf ----------------------------------------------------- */

START_TEST(site_defaults)
{
    struct gm_spank_site s = site_of("");

    ck_assert(!s.has_default && !s.has_max);
    ck_assert_str_eq(s.lib, GM_SPANK_LIB_DEFAULT);
    ck_assert_str_eq(s.prefix, "gpumem");
    ck_assert_uint_eq(s.allow_oom, GM_SPANK_OOM_BIT(GM_OOM_FAIL) |
                                   GM_SPANK_OOM_BIT(GM_OOM_WAIT));
    s = site_of("default=share max=40G lib=/opt/gm/libgpumem.so prefix=site1 "
                "allow-on-oom=wait,spill default-policy=mode=staged,on-oom=wait:1m");
    ck_assert(s.has_default && s.def.kind == GM_LIMIT_SHARE);
    ck_assert(s.has_max && s.max.kind == GM_LIMIT_BYTES && s.max.bytes == 40 * GiB);
    ck_assert_str_eq(s.lib, "/opt/gm/libgpumem.so");
    ck_assert_str_eq(s.prefix, "site1");
    /* fail is always allowed; the list adds to it */
    ck_assert_uint_eq(s.allow_oom, GM_SPANK_OOM_BIT(GM_OOM_FAIL) |
                                   GM_SPANK_OOM_BIT(GM_OOM_WAIT) |
                                   GM_SPANK_OOM_BIT(GM_OOM_SPILL));
    ck_assert(s.def_pol.mode == GM_MODE_STAGED);
    ck_assert_str_eq(s.def_pol.on_oom_text, "wait:1m");
}
END_TEST

static const struct { const char *arg, *why; } bad_site[] = {
    { "max=share", "max='share' is not a size or a percentage" },
    { "max=none", "max='none' is not a size or a percentage" },
    { "allow-on-oom=,", "allow-on-oom=',' names no policy; use a comma-separated list" },
    { "max=40X", "max='40X' " },
    { "default=lots", "default='lots' is not a size" },
    { "lib=libgpumem.so", "lib='libgpumem.so' is not an absolute path" },
    { "prefix=a/b", "prefix='a/b' " },
    { "frobnicate=1", "unknown plugstack.conf argument 'frobnicate'" },
    { "max", "plugstack.conf argument 'max' is not KEY=VALUE" },
    { "allow-on-oom=fail,explode", "allow-on-oom: 'explode' is not an out-of-memory policy" },
    { "default-policy=on-oom=warn", "default-policy: on-oom=warn is not in allow-on-oom" },
};

START_TEST(site_refused)
{
    struct gm_spank_site s;
    char buf[128];
    char *av[1] = { buf };

    memset(&s, 0x5a, sizeof s);
    snprintf(buf, sizeof buf, "%s", bad_site[_i].arg);
    err[0] = '\0';
    ck_assert_int_eq(gm_spank_site_parse(&s, 1, av, err, sizeof err), -1);
    ck_assert_msg(strstr(err, bad_site[_i].why) != NULL, "'%s': %s",
                  bad_site[_i].arg, err);
    ck_assert_uint_eq(s.allow_oom, 0x5a5a5a5au);    /* untouched */
}
END_TEST

/* ---- the job and the ceiling ---------------------------------------------- */

START_TEST(job_clamped_bytes)
{
    struct gm_spank_site s = site_of("max=40G");
    struct gm_spank_job j;
    char note[GM_SPANK_ERR_MAX];

    ck_assert_int_eq(gm_spank_job_make(&s, "50G", NULL, &j, err, sizeof err), 0);
    ck_assert(j.active && j.clamped && !j.mixed);
    ck_assert_uint_eq(j.mem.bytes, 40 * GiB);
    gm_spank_job_notice(&s, &j, note, sizeof note);
    ck_assert_str_eq(note, "gpumem: --gpu-mem=50G is above this cluster's "
                     "ceiling of 40G per GPU; the job gets 40.0 GiB");
    ck_assert_int_eq(gm_spank_job_make(&s, "40G", NULL, &j, err, sizeof err), 0);
    ck_assert(!j.clamped && j.mem.bytes == 40 * GiB);
    ck_assert_uint_eq(gm_spank_job_notice(&s, &j, note, sizeof note), 0);
    ck_assert_str_eq(note, "");
    /* none under a ceiling is the ceiling, and the user is told */
    ck_assert_int_eq(gm_spank_job_make(&s, "none", NULL, &j, err, sizeof err), 0);
    ck_assert(j.active && j.clamped && j.mem.bytes == 40 * GiB);
    /* nothing asked, no default: the ceiling, silently */
    ck_assert_int_eq(gm_spank_job_make(&s, NULL, NULL, &j, err, sizeof err), 0);
    ck_assert(j.active && !j.clamped && j.mem.bytes == 40 * GiB);
}
END_TEST

START_TEST(job_clamped_fraction)
{
    struct gm_spank_site s = site_of("max=50%");
    struct gm_spank_job j;
    char note[GM_SPANK_ERR_MAX];

    ck_assert_int_eq(gm_spank_job_make(&s, "80%", NULL, &j, err, sizeof err), 0);
    ck_assert(j.clamped && j.mem.kind == GM_LIMIT_PERCENT && j.mem.fraction == 0.5);
    gm_spank_job_make(&s, "share", NULL, &j, err, sizeof err);
    ck_assert(j.clamped && j.mem.kind == GM_LIMIT_SHARE && j.mem.fraction == 0.5);
    gm_spank_job_notice(&s, &j, note, sizeof note);
    ck_assert_ptr_nonnull(strstr(note, "the job gets share:0.5"));
    gm_spank_job_make(&s, "share:0.25", NULL, &j, err, sizeof err);
    ck_assert(!j.clamped && j.mem.fraction == 0.25);
    gm_spank_job_make(&s, "60G", NULL, &j, err, sizeof err);
    ck_assert(!j.clamped && j.mixed && j.mem.bytes == 60 * GiB);
}
END_TEST

/* A ceiling in another unit: the notice says what each task is held to,
 * by the rule its GPUMEM_LIMIT follows, in a readable size. */
START_TEST(job_notice_mixed)
{
    struct gm_spank_site pct = site_of("max=50%");
    struct gm_spank_site bytes = site_of("max=40G");
    struct gm_spank_job j;
    static struct gm_spank_var v[GM_SPANK_VARS];
    char note[GM_SPANK_ERR_MAX];
    int n;

    gm_spank_job_make(&pct, "60G", "mode=static", &j, err, sizeof err);
    gm_spank_job_notice(&pct, &j, note, sizeof note);
    ck_assert_str_eq(note, "gpumem: --gpu-mem=60G and this cluster's ceiling "
                     "of 50% per GPU are in different units; each task is "
                     "held to 60.0 GiB divided by the job's tasks on the node "
                     "(mode=static), and the job's tasks on one GPU together "
                     "to 50%");
    n = gm_spank_task_vars(&pct, &j, 7, 2, NULL, v, err, sizeof err);
    ck_assert_str_eq(var(v, n, "GPUMEM_LIMIT"), "32212254720");    /* 30G */
    gm_spank_job_make(&pct, "60G", NULL, &j, err, sizeof err);
    gm_spank_job_notice(&pct, &j, note, sizeof note);
    ck_assert_msg(strstr(note, "each task is held to 60.0 GiB, and") != NULL,
                  "%s", note);
    gm_spank_job_make(&bytes, "30%", "mode=static", &j, err, sizeof err);
    gm_spank_job_notice(&bytes, &j, note, sizeof note);
    ck_assert_msg(strstr(note, "each task is held to 30% of the GPU divided by "
                         "the job's tasks on the node (mode=static), and")
                  != NULL, "%s", note);
    gm_spank_job_make(&bytes, "share:0.5", "mode=static", &j, err, sizeof err);
    gm_spank_job_notice(&bytes, &j, note, sizeof note);
    ck_assert_msg(strstr(note, "each task is held to 0.5 of the GPU divided by "
                         "the job's tasks on the node, and") != NULL, "%s", note);
}
END_TEST

/* No --gpu-mem: the notice names the site's default=, not an option the
 * user never gave, and a default above the ceiling as the site's own
 * mistake. */
START_TEST(job_notice_default)
{
    struct gm_spank_site over = site_of("default=60G max=40G");
    struct gm_spank_site mixed = site_of("default=share max=40G");
    struct gm_spank_job j;
    char note[GM_SPANK_ERR_MAX];

    ck_assert_int_eq(gm_spank_job_make(&over, NULL, NULL, &j, err, sizeof err), 0);
    ck_assert(j.active && j.clamped && j.by_default && j.mem.bytes == 40 * GiB);
    gm_spank_job_notice(&over, &j, note, sizeof note);
    ck_assert_str_eq(note, "gpumem: no --gpu-mem given, and this cluster's "
                     "default=60G is above its ceiling of 40G per GPU (a "
                     "mistake in plugstack.conf: tell the administrators); "
                     "the job gets 40.0 GiB");
    /* the user's own value is still the user's */
    gm_spank_job_make(&over, "60G", NULL, &j, err, sizeof err);
    ck_assert(!j.by_default);
    gm_spank_job_notice(&over, &j, note, sizeof note);
    ck_assert_str_eq(note, "gpumem: --gpu-mem=60G is above this cluster's "
                     "ceiling of 40G per GPU; the job gets 40.0 GiB");
    gm_spank_job_make(&mixed, NULL, NULL, &j, err, sizeof err);
    gm_spank_job_notice(&mixed, &j, note, sizeof note);
    ck_assert_str_eq(note, "gpumem: no --gpu-mem given: this cluster's "
                     "default=share and its ceiling of 40G per GPU "
                     "are in different units; each task is held to 1 of the "
                     "GPU divided by the job's tasks on the node, and the "
                     "job's tasks on one GPU together to 40G");
}
END_TEST

START_TEST(job_default_and_inactive)
{
    struct gm_spank_site none = site_of("");
    struct gm_spank_site def = site_of("default=share max=40G");
    struct gm_spank_job j;

    ck_assert_int_eq(gm_spank_job_make(&none, NULL, NULL, &j, err, sizeof err), 0);
    ck_assert(!j.active);
    ck_assert_int_eq(gm_spank_job_make(&none, "none", NULL, &j, err, sizeof err), 0);
    ck_assert(!j.active);
    /* a policy alone: the group and the policy, no limit */
    ck_assert_int_eq(gm_spank_job_make(&none, NULL, "on-oom=wait", &j, err, sizeof err), 0);
    ck_assert(j.active && j.mem.kind == GM_LIMIT_NONE);
    ck_assert_int_eq(gm_spank_job_make(&def, NULL, NULL, &j, err, sizeof err), 0);
    ck_assert(j.active && j.mem.kind == GM_LIMIT_SHARE && j.mixed);
    ck_assert_str_eq(j.mem_text, "share");
    /* a bad value fails the job, whatever the default */
    ck_assert_int_eq(gm_spank_job_make(&def, "bogus", NULL, &j, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "--gpu-mem='bogus'"));
    /* the combination is checked too: static mode needs a limit */
    ck_assert_int_eq(gm_spank_job_make(&none, NULL, "mode=static", &j, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "--gpu-mem=(none) with --gpu-mem-policy: "
                         "GPUMEM_MODE='static' needs a limit") != NULL, "%s", err);
    ck_assert_int_eq(gm_spank_job_make(&none, "2G", "mode=static", &j, err, sizeof err), 0);
    ck_assert_int_eq(gm_spank_job_make(&def, "1G", "on-oom=warn", &j, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "not allowed on this cluster"));
}
END_TEST

/* ---- what a task gets ------------------------------------------------------ */

/* The library's loader reads v with the meaning the plugin intends. */
static uint64_t resolved(const char *name, const char *v, uint64_t physical)
{
    static struct gm_policy p;
    static struct gm_diag d;
    char e[256];
    char *envp[2] = { e, NULL };

    snprintf(e, sizeof e, "%s=%s", name, v);
    ck_assert_msg(gm_policy_load(&p, envp, &d) == 0, "%s refused: %s", e, d.text);
    return gm_limit_resolve(strcmp(name, "GPUMEM_LIMIT") == 0 ? &p.limit
                                                              : &p.group_limit,
                            physical);
}

START_TEST(task_vars_bytes)
{
    struct gm_spank_site s = site_of("lib=/opt/gm/libgpumem.so prefix=site1 max=40G");
    struct gm_spank_job j;
    static struct gm_spank_var v[GM_SPANK_VARS];
    int n;

    gm_spank_job_make(&s, "256M", "mode=staged,on-oom=wait:30s", &j, err, sizeof err);
    n = gm_spank_task_vars(&s, &j, 4242, 2, NULL, v, err, sizeof err);
    ck_assert_int_eq(n, 7);
    ck_assert_str_eq(var(v, n, "GPUMEM_LIMIT"), "268435456");
    ck_assert_str_eq(var(v, n, "GPUMEM_GROUP_LIMIT"), "268435456");
    ck_assert_str_eq(var(v, n, "GPUMEM_GROUP"), "slurm-4242");
    ck_assert_str_eq(var(v, n, "GPUMEM_MODE"), "staged");
    ck_assert_str_eq(var(v, n, "GPUMEM_ON_OOM"), "wait:30s");
    /* static: each task's arena is its part of the job's budget */
    gm_spank_job_make(&s, "256M", "mode=static", &j, err, sizeof err);
    n = gm_spank_task_vars(&s, &j, 4242, 2, NULL, v, err, sizeof err);
    ck_assert_str_eq(var(v, n, "GPUMEM_MODE"), "static");
    ck_assert_str_eq(var(v, n, "GPUMEM_LIMIT"), "134217728");
    ck_assert_str_eq(var(v, n, "GPUMEM_GROUP_LIMIT"), "268435456");
    gm_spank_job_make(&s, "30%", "mode=static", &j, err, sizeof err);
    n = gm_spank_task_vars(&s, &j, 4242, 3, NULL, v, err, sizeof err);
    ck_assert_str_eq(var(v, n, "GPUMEM_LIMIT"), "10%");
    ck_assert_str_eq(var(v, n, "GPUMEM_GROUP_LIMIT"), "42949672960"); /* max=40G */
    ck_assert_str_eq(var(v, n, "GPUMEM_SHM_PREFIX"), "site1");
    ck_assert_str_eq(var(v, n, "LD_PRELOAD"), "/opt/gm/libgpumem.so");
    /* defaults of the policy: grow, fail (a job's own GPUMEM_ON_OOM=warn
     * is replaced) */
    gm_spank_job_make(&s, "1G", NULL, &j, err, sizeof err);
    n = gm_spank_task_vars(&s, &j, 1, 1, "libfoo.so", v, err, sizeof err);
    ck_assert_str_eq(var(v, n, "GPUMEM_MODE"), "grow");
    ck_assert_str_eq(var(v, n, "GPUMEM_ON_OOM"), "fail");
    ck_assert_str_eq(var(v, n, "LD_PRELOAD"), "/opt/gm/libgpumem.so:libfoo.so");
    /* already preloaded: kept as is, not twice */
    n = gm_spank_task_vars(&s, &j, 1, 1, "libfoo.so /opt/gm/libgpumem.so", v,
                           err, sizeof err);
    ck_assert_str_eq(var(v, n, "LD_PRELOAD"), "libfoo.so /opt/gm/libgpumem.so");
    for (int i = 0; i < n; i++)
        if (strstr(v[i].name, "LIMIT") != NULL)
            ck_assert_uint_eq(resolved(v[i].name, v[i].value, 80 * GiB), GiB);
    /* the whole set, as a task gets it, loads without a message */
    static struct gm_policy p;
    static struct gm_diag d;
    char *envp[GM_SPANK_VARS + 1];
    static char ent[GM_SPANK_VARS][GM_PATH_MAX + 160];
    for (int i = 0; i < n; i++) {
        snprintf(ent[i], sizeof ent[i], "%s=%s", v[i].name, v[i].value);
        envp[i] = ent[i];
    }
    envp[n] = NULL;
    ck_assert_msg(gm_policy_load(&p, envp, &d) == 0 && d.warnings == 0, "%s", d.text);
    ck_assert_str_eq(p.group, "slurm-1");
    ck_assert_uint_eq(gm_limit_resolve(&p.group_limit, 80 * GiB), GiB);
}
END_TEST

START_TEST(task_vars_share)
{
    struct gm_spank_site s = site_of("");
    struct gm_spank_site capped = site_of("max=40G");
    struct gm_spank_job j;
    static struct gm_spank_var v[GM_SPANK_VARS];
    int n;

    gm_spank_job_make(&s, "share:0.5", NULL, &j, err, sizeof err);
    n = gm_spank_task_vars(&s, &j, 7, 2, NULL, v, err, sizeof err);
    ck_assert_str_eq(var(v, n, "GPUMEM_LIMIT"), "25%");
    ck_assert_str_eq(var(v, n, "GPUMEM_GROUP_LIMIT"), "50%");
    /* three tasks: a third of the GPU each, as the library resolves it */
    gm_spank_job_make(&s, "share", NULL, &j, err, sizeof err);
    n = gm_spank_task_vars(&s, &j, 7, 3, NULL, v, err, sizeof err);
    ck_assert_str_eq(var(v, n, "GPUMEM_LIMIT"), "33.333333333%");
    uint64_t third = resolved("GPUMEM_LIMIT", var(v, n, "GPUMEM_LIMIT"), 90 * GiB);
    ck_assert_msg(third <= 30 * GiB && third > 30 * GiB - 64, "%llu",
                  (unsigned long long)third);
    ck_assert_uint_eq(resolved("GPUMEM_GROUP_LIMIT", var(v, n, "GPUMEM_GROUP_LIMIT"),
                               90 * GiB), 90 * GiB);
    /* 0 tasks (not known) is one */
    n = gm_spank_task_vars(&s, &j, 7, 0, NULL, v, err, sizeof err);
    ck_assert_str_eq(var(v, n, "GPUMEM_LIMIT"), "100%");
    /* a ceiling in bytes: the group holds the tasks to it */
    gm_spank_job_make(&capped, "share", NULL, &j, err, sizeof err);
    n = gm_spank_task_vars(&capped, &j, 7, 4, NULL, v, err, sizeof err);
    ck_assert_str_eq(var(v, n, "GPUMEM_LIMIT"), "25%");
    ck_assert_str_eq(var(v, n, "GPUMEM_GROUP_LIMIT"), "42949672960");
}
END_TEST

/* A per-task limit the library would refuse fails the task's setup,
 * naming the value, the task count and the most tasks it allows; the
 * variables are left untouched. */
START_TEST(task_vars_refused_split)
{
    struct gm_spank_site s = site_of("");
    struct gm_spank_job j;
    static struct gm_spank_var v[GM_SPANK_VARS];
    int n;

    ck_assert_int_eq(gm_spank_job_make(&s, "share:0.000000001", NULL, &j, err,
                                       sizeof err), 0);
    n = gm_spank_task_vars(&s, &j, 7, 1, NULL, v, err, sizeof err);
    ck_assert_str_eq(var(v, n, "GPUMEM_LIMIT"), "0.0000001%");
    v[0].name = "untouched";
    err[0] = '\0';
    ck_assert_int_eq(gm_spank_task_vars(&s, &j, 7, 4, NULL, v, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "--gpu-mem=share:0.000000001 with 4 tasks on this "
                         "node: each task's GPUMEM_LIMIT='0.000000025%' is "
                         "below 0.0000001%") != NULL, "%s", err);
    ck_assert_msg(strstr(err, "allows at most 1 task on a node") != NULL, "%s", err);
    ck_assert_str_eq(v[0].name, "untouched");
    /* static mode splits every form: 50% among 4e9 tasks */
    gm_spank_job_make(&s, "50%", "mode=static", &j, err, sizeof err);
    ck_assert_int_eq(gm_spank_task_vars(&s, &j, 7, 4000000000u, NULL, v, err,
                                        sizeof err), -1);
    ck_assert_msg(strstr(err, "--gpu-mem=50% with 4000000000 tasks on this node: "
                         "each task's GPUMEM_LIMIT='0.000000013%'") != NULL, "%s", err);
    /* the most it names is the loader's own edge */
    const char *most = strstr(err, "at most ");
    ck_assert_ptr_nonnull(most);
    unsigned long m = strtoul(most + 8, NULL, 10);
    ck_assert_int_gt(gm_spank_task_vars(&s, &j, 7, (uint32_t)m, NULL, v, err,
                                        sizeof err), 0);
    ck_assert_int_eq(gm_spank_task_vars(&s, &j, 7, (uint32_t)m + 1, NULL, v, err,
                                        sizeof err), -1);
    /* bytes never go below one byte: accepted */
    gm_spank_job_make(&s, "3", "mode=static", &j, err, sizeof err);
    n = gm_spank_task_vars(&s, &j, 7, 4000000000u, NULL, v, err, sizeof err);
    ck_assert_str_eq(var(v, n, "GPUMEM_LIMIT"), "1");
}
END_TEST

START_TEST(task_vars_inactive_and_long)
{
    struct gm_spank_site s = site_of("");
    struct gm_spank_job j;
    static struct gm_spank_var v[GM_SPANK_VARS];
    static char longp[GM_PATH_MAX + 200];

    gm_spank_job_make(&s, NULL, NULL, &j, err, sizeof err);
    ck_assert_int_eq(gm_spank_task_vars(&s, &j, 1, 1, NULL, v, err, sizeof err), 0);
    /* a policy without a limit: no group (the library needs a group
     * limit), the policy and the preload */
    int n;
    gm_spank_job_make(&s, NULL, "on-oom=wait:5s", &j, err, sizeof err);
    n = gm_spank_task_vars(&s, &j, 9, 1, NULL, v, err, sizeof err);
    ck_assert_int_eq(n, 4);
    ck_assert_ptr_null(var(v, n, "GPUMEM_GROUP"));
    ck_assert_ptr_null(var(v, n, "GPUMEM_LIMIT"));
    ck_assert_str_eq(var(v, n, "GPUMEM_ON_OOM"), "wait:5s");
    static struct gm_policy p;
    static struct gm_diag d;
    char *envp[GM_SPANK_VARS + 1];
    static char ent[GM_SPANK_VARS][GM_PATH_MAX + 160];
    for (int i = 0; i < n; i++) {
        snprintf(ent[i], sizeof ent[i], "%s=%s", v[i].name, v[i].value);
        envp[i] = ent[i];
    }
    envp[n] = NULL;
    ck_assert_msg(gm_policy_load(&p, envp, &d) == 0, "%s", d.text);
    gm_spank_job_make(&s, "1G", NULL, &j, err, sizeof err);
    memset(longp, 'x', sizeof longp - 1);
    ck_assert_int_eq(gm_spank_task_vars(&s, &j, 1, 1, longp, v, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "LD_PRELOAD of the task is longer than"));
}
END_TEST

/* A task's environment as slurm_spank_task_init leaves it: the job's
 * own variables `user` (NULL-terminated "NAME=VALUE"), less those
 * gm_spank_task_unset names, with gm_spank_task_vars's set over them;
 * loaded by the library's loader into *p (0 when it accepts them). */
static int task_env(const struct gm_spank_site *s, const struct gm_spank_job *j,
                    const char *const *user, struct gm_policy *p,
                    struct gm_diag *d)
{
    static struct gm_spank_var v[GM_SPANK_VARS];
    static struct gm_spank_unset drop[GM_SPANK_UNSET_MAX];
    static char ent[32 + GM_SPANK_VARS][GM_PATH_MAX + 160];
    char *envp[32 + GM_SPANK_VARS + 1];
    int n = gm_spank_task_vars(s, j, 5, 1, NULL, v, err, sizeof err);
    int u = gm_spank_task_unset(j, drop), e = 0;

    ck_assert_int_ge(n, 0);
    for (; *user != NULL && e < 32; user++) {
        size_t k = strcspn(*user, "=");
        bool gone = false;
        for (int i = 0; i < u; i++)
            gone |= strlen(drop[i].name) == k && !strncmp(drop[i].name, *user, k);
        for (int i = 0; i < n; i++)
            gone |= strlen(v[i].name) == k && !strncmp(v[i].name, *user, k);
        if (!gone)
            snprintf(ent[e++], sizeof ent[0], "%s", *user);
    }
    for (int i = 0; i < n; i++)
        snprintf(ent[e++], sizeof ent[0], "%s=%s", v[i].name, v[i].value);
    for (int i = 0; i < e; i++)
        envp[i] = ent[i];
    envp[e] = NULL;
    return gm_policy_load(p, envp, d);
}

/* --gpu-mem=none runs the task unlimited, whatever the job's environment
 * held: no limit of any device, no group (a group left without its limit
 * stopped every task with "GPUMEM_GROUP='mine' has no group limit"). */
START_TEST(task_env_none_drops_group)
{
    struct gm_spank_site s = site_of("");
    struct gm_spank_job j;
    static struct gm_policy p;
    static struct gm_diag d;
    static struct gm_spank_unset drop[GM_SPANK_UNSET_MAX];
    const char *const user[] = { "GPUMEM_GROUP=mine", "GPUMEM_GROUP_LIMIT=4G",
                                 "GPUMEM_LIMIT=2G", "GPUMEM_LIMIT_3=1G",
                                 "GPUMEM_PRIORITY=high", NULL };

    ck_assert_int_eq(gm_spank_job_make(&s, "none", "on-oom=wait", &j, err,
                                       sizeof err), 0);
    ck_assert(j.active && j.mem.kind == GM_LIMIT_NONE);
    ck_assert_msg(task_env(&s, &j, user, &p, &d) == 0, "%s", d.text);
    ck_assert_str_eq(p.group, "");
    ck_assert_int_eq(p.limit.kind, GM_LIMIT_NONE);
    ck_assert_int_eq(p.dev_limit[3].kind, GM_LIMIT_NONE);
    ck_assert_int_eq(p.on_oom, GM_OOM_WAIT);
    /* a job with a limit: the plugin's group replaces the job's */
    gm_spank_job_make(&s, "1G", NULL, &j, err, sizeof err);
    ck_assert_msg(task_env(&s, &j, user, &p, &d) == 0, "%s", d.text);
    ck_assert_str_eq(p.group, "slurm-5");
    ck_assert_int_eq(p.dev_limit[3].kind, GM_LIMIT_NONE);
    /* nothing asked: nothing removed */
    gm_spank_job_make(&s, "none", NULL, &j, err, sizeof err);
    ck_assert_int_eq(gm_spank_task_unset(&j, drop), 0);
}
END_TEST

static Suite *spank_suite(void)
{
    Suite *s = suite_create("spank");
    TCase *t = tcase_create("values");

    tcase_add_test(t, mem_forms);
    tcase_add_loop_test(t, mem_refused, 0, N(bad_mem));
    tcase_add_test(t, mem_too_long);
    tcase_add_test(t, policy_forms);
    tcase_add_loop_test(t, policy_refused, 0, N(bad_pol));
    tcase_add_test(t, site_defaults);
    tcase_add_loop_test(t, site_refused, 0, N(bad_site));
    suite_add_tcase(s, t);
    t = tcase_create("job");
    tcase_add_test(t, job_clamped_bytes);
    tcase_add_test(t, job_clamped_fraction);
    tcase_add_test(t, job_notice_mixed);
    tcase_add_test(t, job_notice_default);
    tcase_add_test(t, job_default_and_inactive);
    tcase_add_test(t, task_vars_bytes);
    tcase_add_test(t, task_vars_share);
    tcase_add_test(t, task_vars_refused_split);
    tcase_add_test(t, task_vars_inactive_and_long);
    tcase_add_test(t, task_env_none_drops_group);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(spank_suite());
    int failed;

    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
