/*
 * tools/spank/jobspec.c — the Slurm plugin's decisions (see jobspec.h):
 * plugstack.conf arguments, --gpu-mem and --gpu-mem-policy values, the
 * ceiling, and the variables of each task.
 *
 * Invariants: a value is accepted only when the library's own policy
 * loader accepts it in the variable it ends up in (at submission the
 * variables of a one-task step; each task's own limit, which depends on
 * the node's task count, again when the task is set up); the job's memory is
 * never above a ceiling of the same unit, and with a ceiling of another
 * unit the group limit is the ceiling, so the job's tasks on one GPU
 * together never pass it; a job of a site with a ceiling is never left
 * unlimited.
 */
#include "tools/spank/jobspec.h"

#include <stdio.h>
#include <string.h>

#include "policy/parse.h"
#include "shim/base/shmfile.h"

const char gm_spank_mem_forms[] =
    "use SIZE (bytes, or a number with K/M/G/T: 512M, 40G), NN% of the GPU, "
    "share[:F] (F of the GPU, split evenly among the job's tasks on the "
    "node; F in (0, 1], default 1), or none";
const char gm_spank_policy_forms[] =
    "use KEY=VALUE[,KEY=VALUE] with mode=grow|static|staged and "
    "on-oom=fail|wait|wait:DURATION|spill|warn (e.g. "
    "mode=static,on-oom=wait:30s)";

static const char F_MAX[] =
    "use SIZE (bytes, or a number with K/M/G/T: 40G) or NN% of the GPU";

/* ---- the library's parser ------------------------------------------------ */

/* Load a one-variable environment with the library's loader. On refusal
 * the reason (the words between the quoted value and "; use") goes to
 * why; an empty reason when the message has another shape. */
static int lib_load(const char *var, const char *val, struct gm_policy *p,
                    char *why, size_t cap)
{
    static struct gm_diag d;    /* 8 KiB: off the stack of the callers */
    char entry[256];
    /* A limit beside a mode or an on-OOM value, so that their own form is
     * what is checked here (static mode needs a limit: gm_spank_job_make
     * checks the combination). */
    char limit[] = "GPUMEM_LIMIT=1G";
    char *envp[3] = { entry, strcmp(var, "GPUMEM_LIMIT") ? limit : NULL, NULL };
    int n = snprintf(entry, sizeof entry, "%s=%s", var, val);

    if (n < 0 || (size_t)n >= sizeof entry) {
        snprintf(why, cap, "is longer than %zu characters",
                 sizeof entry - strlen(var) - 2);
        return -1;
    }
    if (gm_policy_load(p, envp, &d) == 0)
        return 0;
    /* "VAR='<value>' <reason>; use ...": the value holds no space (the
     * callers refuse one first), so its quote ends at the first "' "
     * after "VAR='" (the reason may quote text of its own: the last "' "
     * before "; use" can be inside it). */
    char lead[64];
    snprintf(lead, sizeof lead, "%s='", var);
    const char *v = strstr(d.text, lead);
    const char *q = v != NULL ? strstr(v + strlen(lead), "' ") : NULL;
    const char *use = q != NULL ? strstr(q + 2, "; use ") : NULL;
    if (use != NULL)
        snprintf(why, cap, "%.*s", (int)(use - q - 2), q + 2);
    else
        snprintf(why, cap, "is not accepted");
    return -1;
}

static bool has_space_or_ctl(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == 0x7f)
            return true;
    return false;
}

int gm_spank_mem_parse(const char *opt, const char *val, struct gm_limit *out,
                       char *err, size_t cap)
{
    static struct gm_policy p;
    char why[256];

    if (val == NULL || val[0] == '\0') {
        snprintf(err, cap, "%s needs a value; %s", opt, gm_spank_mem_forms);
        return -1;
    }
    if (has_space_or_ctl(val) ||
        lib_load("GPUMEM_LIMIT", val, &p, why, sizeof why) != 0) {
        if (has_space_or_ctl(val))
            snprintf(why, sizeof why, "contains a space or control character");
        snprintf(err, cap, "%s='%.64s' %s; %s", opt, val, why,
                 gm_spank_mem_forms);
        return -1;
    }
    *out = p.limit;
    return 0;
}

/* ---- --gpu-mem-policy ---------------------------------------------------- */

static size_t oom_list(unsigned allow, char *buf, size_t cap)
{
    static const enum gm_on_oom all[] = { GM_OOM_FAIL, GM_OOM_WAIT,
                                          GM_OOM_SPILL, GM_OOM_WARN };
    size_t len = 0, i;

    buf[0] = '\0';
    for (i = 0; i < 4; i++)
        if (allow & GM_SPANK_OOM_BIT(all[i]))
            len += (size_t)snprintf(buf + (len < cap ? len : cap),
                                    len < cap ? cap - len : 0, "%s%s",
                                    len ? ", " : "", gm_on_oom_name(all[i]));
    return len;
}

/* One KEY=VALUE of a policy into pol: the key it set (POL_MODE,
 * POL_OOM), or -1 with the reason in err. */
#define POL_MODE 1
#define POL_OOM 2
static int pol_item(const char *opt, const char *key, size_t klen,
                    const char *v, unsigned allow, struct gm_spank_pol *pol,
                    char *err, size_t cap)
{
    static struct gm_policy p;
    char why[256];
    bool mode = klen == 4 && strncmp(key, "mode", 4) == 0;
    bool oom = klen == 6 && (strncmp(key, "on-oom", 6) == 0 ||
                             strncmp(key, "on_oom", 6) == 0);

    if (!mode && !oom) {
        snprintf(err, cap, "%s: unknown key '%.*s'; %s", opt,
                 (int)(klen > 32 ? 32 : klen), key, gm_spank_policy_forms);
        return -1;
    }
    if (lib_load(mode ? "GPUMEM_MODE" : "GPUMEM_ON_OOM", v, &p, why,
                 sizeof why) != 0) {
        snprintf(err, cap, "%s: %s='%.48s' %s; %s", opt, mode ? "mode" : "on-oom",
                 v, why, gm_spank_policy_forms);
        return -1;
    }
    if (mode) {
        pol->mode_set = true;
        pol->mode = p.mode;
        return POL_MODE;
    }
    if (!(allow & GM_SPANK_OOM_BIT(p.on_oom))) {
        char list[64];
        oom_list(allow, list, sizeof list);
        snprintf(err, cap, "%s: on-oom=%s is not allowed on this cluster; "
                 "use %s", opt, gm_on_oom_name(p.on_oom), list);
        return -1;
    }
    if (strlen(v) >= sizeof pol->on_oom_text) {
        snprintf(err, cap, "%s: on-oom='%.48s' is too long; %s", opt, v,
                 gm_spank_policy_forms);
        return -1;
    }
    pol->on_oom_set = true;
    pol->on_oom = p.on_oom;
    snprintf(pol->on_oom_text, sizeof pol->on_oom_text, "%s", v);
    return POL_OOM;
}

int gm_spank_pol_parse(const char *opt, const char *val, unsigned allow,
                       struct gm_spank_pol *out, char *err, size_t cap)
{
    struct gm_spank_pol pol = *out;
    char buf[256];
    char *item, *save = NULL;

    if (val == NULL || val[0] == '\0' || has_space_or_ctl(val) ||
        strlen(val) >= sizeof buf) {
        snprintf(err, cap, "%s='%.64s' %s; %s", opt, val ? val : "",
                 val == NULL || val[0] == '\0' ? "is empty"
                 : has_space_or_ctl(val) ? "contains a space or control character"
                                         : "is too long",
                 gm_spank_policy_forms);
        return -1;
    }
    memcpy(buf, val, strlen(val) + 1);
    int seen = 0;
    for (item = strtok_r(buf, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        const char *eq = strchr(item, '=');
        if (eq == NULL || eq == item) {
            snprintf(err, cap, "%s: '%.48s' is not KEY=VALUE; %s", opt, item,
                     gm_spank_policy_forms);
            return -1;
        }
        int key = pol_item(opt, item, (size_t)(eq - item), eq + 1, allow,
                           &pol, err, cap);
        if (key < 0)
            return -1;
        /* a key given twice is a mistake, not "the last one wins" */
        if (seen & key) {
            snprintf(err, cap, "%s='%.64s' gives %s twice; give each key "
                     "once; %s", opt, val, key == POL_MODE ? "mode" : "on-oom",
                     gm_spank_policy_forms);
            return -1;
        }
        seen |= key;
    }
    if (seen == 0) {
        snprintf(err, cap, "%s='%.64s' names no KEY=VALUE; %s", opt, val,
                 gm_spank_policy_forms);
        return -1;
    }
    *out = pol;
    return 0;
}

/* ---- the site ------------------------------------------------------------ */

static int oom_allow_parse(const char *v, unsigned *out, char *err, size_t cap)
{
    static const enum gm_on_oom all[] = { GM_OOM_FAIL, GM_OOM_WAIT,
                                          GM_OOM_SPILL, GM_OOM_WARN };
    char buf[128];
    char *w, *save = NULL;
    unsigned set = GM_SPANK_OOM_BIT(GM_OOM_FAIL);
    size_t i;

    if (strlen(v) >= sizeof buf || v[0] == '\0') {
        snprintf(err, cap, "allow-on-oom='%.48s' is %s; use a comma-separated "
                 "list of fail, wait, spill, warn", v, v[0] ? "too long" : "empty");
        return -1;
    }
    memcpy(buf, v, strlen(v) + 1);
    if (strspn(v, ",") == strlen(v)) {
        snprintf(err, cap, "allow-on-oom='%.48s' names no policy; use a "
                 "comma-separated list of fail, wait, spill, warn", v);
        return -1;
    }
    for (w = strtok_r(buf, ",", &save); w != NULL; w = strtok_r(NULL, ",", &save)) {
        for (i = 0; i < 4; i++)
            if (gm_ascii_ieq(w, gm_on_oom_name(all[i])))
                break;
        if (i == 4) {
            snprintf(err, cap, "allow-on-oom: '%.32s' is not an out-of-memory "
                     "policy; use a comma-separated list of fail, wait, spill, "
                     "warn", w);
            return -1;
        }
        set |= GM_SPANK_OOM_BIT(all[i]);
    }
    *out = set;
    return 0;
}

static int site_arg(struct gm_spank_site *s, const char *a, char *err,
                    size_t cap)
{
    const char *eq = strchr(a, '=');
    size_t k = eq ? (size_t)(eq - a) : strlen(a);
    const char *v = eq ? eq + 1 : "";

#define KEY(w) (k == sizeof(w) - 1 && strncmp(a, w, k) == 0)
    if (eq == NULL) {
        snprintf(err, cap, "plugstack.conf argument '%.48s' is not KEY=VALUE; "
                 "use default=, max=, lib=, prefix=, allow-on-oom= or "
                 "default-policy=", a);
        return -1;
    }
    if (KEY("default")) {
        if (gm_spank_mem_parse("default", v, &s->def, err, cap) != 0)
            return -1;
        s->has_default = s->def.kind != GM_LIMIT_NONE;
        snprintf(s->def_text, sizeof s->def_text, "%.63s", v);
        return 0;
    }
    if (KEY("max")) {
        struct gm_limit m;
        if (gm_spank_mem_parse("max", v, &m, err, cap) != 0)
            return -1;
        if (m.kind != GM_LIMIT_BYTES && m.kind != GM_LIMIT_PERCENT) {
            snprintf(err, cap, "max='%.48s' is not a size or a percentage; %s",
                     v, F_MAX);
            return -1;
        }
        s->has_max = true;
        s->max = m;
        snprintf(s->max_text, sizeof s->max_text, "%.63s", v);
        return 0;
    }
    if (KEY("lib")) {
        if (v[0] != '/' || strlen(v) >= sizeof s->lib || has_space_or_ctl(v)) {
            snprintf(err, cap, "lib='%.64s' is not an absolute path without "
                     "spaces; use the installed library, e.g. lib=%s", v,
                     GM_SPANK_LIB_DEFAULT);
            return -1;
        }
        memcpy(s->lib, v, strlen(v) + 1);
        return 0;
    }
    if (KEY("prefix")) {
        static struct gm_policy p;
        char why[256];
        if (lib_load("GPUMEM_SHM_PREFIX", v, &p, why, sizeof why) != 0) {
            snprintf(err, cap, "prefix='%.48s' %s; use "
                     GM_SHM_PREFIX_RULE, v, why);
            return -1;
        }
        snprintf(s->prefix, sizeof s->prefix, "%s", p.shm_prefix);
        return 0;
    }
    if (KEY("allow-on-oom"))
        return oom_allow_parse(v, &s->allow_oom, err, cap);
    if (KEY("default-policy"))
        return gm_spank_pol_parse("default-policy", v, GM_SPANK_OOM_ALL,
                                  &s->def_pol, err, cap);
#undef KEY
    snprintf(err, cap, "unknown plugstack.conf argument '%.*s'; use default=, "
             "max=, lib=, prefix=, allow-on-oom= or default-policy=",
             (int)(k > 32 ? 32 : k), a);
    return -1;
}

int gm_spank_site_parse(struct gm_spank_site *site, int ac, char *const *av,
                        char *err, size_t cap)
{
    static struct gm_spank_site s;
    int i;

    memset(&s, 0, sizeof s);
    snprintf(s.lib, sizeof s.lib, "%s", GM_SPANK_LIB_DEFAULT);
    snprintf(s.prefix, sizeof s.prefix, "gpumem");
    s.allow_oom = GM_SPANK_OOM_BIT(GM_OOM_FAIL) | GM_SPANK_OOM_BIT(GM_OOM_WAIT);
    for (i = 0; i < ac; i++)
        if (av[i] == NULL || site_arg(&s, av[i], err, cap) != 0)
            return -1;
    if (s.def_pol.on_oom_set && !(s.allow_oom & GM_SPANK_OOM_BIT(s.def_pol.on_oom))) {
        snprintf(err, cap, "default-policy: on-oom=%s is not in allow-on-oom",
                 gm_on_oom_name(s.def_pol.on_oom));
        return -1;
    }
    *site = s;
    return 0;
}

/* ---- the job ------------------------------------------------------------- */

size_t gm_spank_limit_text(const struct gm_limit *l, double scale, char *buf,
                           size_t cap)
{
    if (l->kind == GM_LIMIT_BYTES)
        return (size_t)snprintf(buf, cap, "%llu", (unsigned long long)l->bytes);
    if (l->kind == GM_LIMIT_NONE)
        return (size_t)snprintf(buf, cap, "none");
    char num[48];
    gm_format_decimal(l->fraction * scale * 100.0, 9, num, sizeof num);
    return (size_t)snprintf(buf, cap, "%s%%", num);
}

/* Whether each task's own limit is its part of the job's (1/n): share
 * always; every form in static mode, which takes each task's whole limit
 * up front, so that the tasks' arenas split the budget as share does. */
static bool splits(const struct gm_spank_job *j)
{
    return j->mem.kind == GM_LIMIT_SHARE ||
           (j->pol.mode_set && j->pol.mode == GM_MODE_STATIC);
}

/* Each task's own limit with n (>= 1) tasks on the node: a split size
 * never below one byte; a split fraction of the GPU, share:F included,
 * is F / n (GPUMEM_LIMIT states it as a percentage). */
static struct gm_limit task_limit(const struct gm_spank_job *j, uint32_t n)
{
    struct gm_limit each = j->mem;

    if (!splits(j))
        return each;
    if (each.kind == GM_LIMIT_BYTES)
        each.bytes = each.bytes / n ? each.bytes / n : 1;
    else
        each.fraction = each.fraction / n;
    return each;
}

/* Both in one unit: bytes, or fractions of the GPU (NN% and share:F). */
static bool same_unit(const struct gm_limit *a, const struct gm_limit *m)
{
    if (m->kind == GM_LIMIT_BYTES)
        return a->kind == GM_LIMIT_BYTES;
    return a->kind == GM_LIMIT_PERCENT || a->kind == GM_LIMIT_SHARE;
}

/* The first line of the loader's message, without its "gpumem: " and,
 * when cut, without the closing "; use ..." list of forms. */
static void diag_line(const char *text, bool cut, char *out, size_t cap)
{
    size_t skip = strncmp(text, "gpumem: ", 8) == 0 ? 8 : 0;
    size_t len = strcspn(text + skip, "\n");
    const char *use = cut ? strstr(text + skip, "; use ") : NULL;

    if (use != NULL && (size_t)(use - text - skip) < len)
        len = (size_t)(use - text - skip);
    snprintf(out, cap, "%.*s", (int)len, text + skip);
}

/* Load a task's variables, all together, with the library's loader; on
 * refusal the loader's first line goes to why (see diag_line). */
static int load_vars(const struct gm_spank_var *vars, int n, bool cut,
                     char *why, size_t cap)
{
    static struct gm_policy p;
    static struct gm_diag d;
    static char ent[GM_SPANK_VARS][GM_PATH_MAX + 160];
    char *envp[GM_SPANK_VARS + 1];
    int i;

    for (i = 0; i < n; i++) {
        snprintf(ent[i], sizeof ent[i], "%s=%s", vars[i].name, vars[i].value);
        envp[i] = ent[i];
    }
    envp[n] = NULL;
    if (gm_policy_load(&p, envp, &d) == 0)
        return 0;
    diag_line(d.text, cut, why, cap);
    return -1;
}

static int build_vars(const struct gm_spank_site *site,
                      const struct gm_spank_job *job, uint32_t jobid,
                      uint32_t ntasks, const char *preload,
                      struct gm_spank_var *vars, char *err, size_t cap);

/* The job's variables as the task of a one-task step gets them, loaded
 * together (the cross-checks between limit, mode and on-OOM). */
static int check_combined(const struct gm_spank_site *site,
                          const struct gm_spank_job *j, char *err, size_t cap)
{
    static struct gm_spank_var v[GM_SPANK_VARS];
    char why[GM_SPANK_ERR_MAX];
    int n = build_vars(site, j, 1, 1, NULL, v, why, sizeof why);

    if (n >= 0 && load_vars(v, n, false, why, sizeof why) == 0)
        return 0;
    snprintf(err, cap, "--gpu-mem=%s with --gpu-mem-policy: %s",
             j->mem_text[0] ? j->mem_text : "(none)", why);
    return -1;
}

int gm_spank_job_make(const struct gm_spank_site *site, const char *mem,
                      const char *pol, struct gm_spank_job *job, char *err,
                      size_t cap)
{
    struct gm_spank_job j;

    memset(&j, 0, sizeof j);
    j.pol = site->def_pol;
    if (pol != NULL &&
        gm_spank_pol_parse("--gpu-mem-policy", pol, site->allow_oom, &j.pol,
                           err, cap) != 0)
        return -1;
    if (mem != NULL) {
        if (gm_spank_mem_parse("--gpu-mem", mem, &j.mem, err, cap) != 0)
            return -1;
        snprintf(j.mem_text, sizeof j.mem_text, "%.63s", mem);
    } else if (site->has_default) {
        j.mem = site->def;
        j.by_default = true;
        snprintf(j.mem_text, sizeof j.mem_text, "%s", site->def_text);
    } else if (site->has_max) {
        j.mem = site->max;
        snprintf(j.mem_text, sizeof j.mem_text, "%s", site->max_text);
    }
    if (j.mem.kind == GM_LIMIT_NONE) {
        if (site->has_max) {
            j.mem = site->max;
            j.clamped = mem != NULL;
        } else if (pol == NULL) {
            *job = j;   /* inactive: nothing asked, nothing imposed */
            return 0;
        }
    }
    j.active = true;
    if (site->has_max && j.mem.kind != GM_LIMIT_NONE) {
        if (!same_unit(&j.mem, &site->max)) {
            j.mixed = true;
        } else if (site->max.kind == GM_LIMIT_BYTES) {
            if (j.mem.bytes > site->max.bytes) {
                j.mem.bytes = site->max.bytes;
                j.clamped = true;
            }
        } else if (j.mem.fraction > site->max.fraction) {
            j.mem.fraction = site->max.fraction;
            j.clamped = true;
        }
    }
    if (check_combined(site, &j, err, cap) != 0)
        return -1;
    *job = j;
    return 0;
}

/* What each task is held to, in words (task_limit's rule): the task
 * count of a node is not known at submission, so a split is named as one,
 * "60.0 GiB divided by the job's tasks on the node (mode=static)". */
static void each_words(const struct gm_spank_job *j, char *buf, size_t cap)
{
    struct gm_limit one = task_limit(j, 1);
    char v[48];

    if (one.kind == GM_LIMIT_BYTES)
        gm_format_size(one.bytes, v, sizeof v);
    else if (one.kind == GM_LIMIT_SHARE)
        gm_format_decimal(one.fraction, 9, v, sizeof v);
    else
        gm_spank_limit_text(&one, 1.0, v, sizeof v);
    snprintf(buf, cap, "%s%s%s%s", v,
             one.kind == GM_LIMIT_BYTES ? "" : " of the GPU",
             splits(j) ? " divided by the job's tasks on the node" : "",
             splits(j) && j->mem.kind != GM_LIMIT_SHARE ? " (mode=static)"
                                                         : "");
}

size_t gm_spank_job_notice(const struct gm_spank_site *site,
                           const struct gm_spank_job *job, char *buf,
                           size_t cap)
{
    char got[64];

    if (cap > 0)
        buf[0] = '\0';
    if (!job->active || !site->has_max)
        return 0;
    if (job->clamped) {
        if (job->mem.kind == GM_LIMIT_SHARE) {
            char f[32];
            gm_format_decimal(job->mem.fraction, 9, f, sizeof f);
            snprintf(got, sizeof got, "share:%s", f);
        } else if (job->mem.kind == GM_LIMIT_BYTES) {
            gm_format_size(job->mem.bytes, got, sizeof got);
        } else {
            gm_spank_limit_text(&job->mem, 1.0, got, sizeof got);
        }
        if (job->by_default)
            return (size_t)snprintf(buf, cap, "gpumem: no --gpu-mem given, "
                "and this cluster's default=%s is above its ceiling of %s per "
                "GPU (a mistake in plugstack.conf: tell the administrators); "
                "the job gets %s", job->mem_text, site->max_text, got);
        return (size_t)snprintf(buf, cap, "gpumem: --gpu-mem=%s is above this "
            "cluster's ceiling of %s per GPU; the job gets %s", job->mem_text,
            site->max_text, got);
    }
    if (job->mixed) {
        char each[128], asked[96];
        each_words(job, each, sizeof each);
        snprintf(asked, sizeof asked, job->by_default
                 ? "no --gpu-mem given: this cluster's default=%s and its"
                 : "--gpu-mem=%s and this cluster's", job->mem_text);
        return (size_t)snprintf(buf, cap, "gpumem: %s "
            "ceiling of %s per GPU are in different units; each task is held "
            "to %s, and the job's tasks on one GPU together to %s", asked,
            site->max_text, each, site->max_text);
    }
    return 0;
}

/* LD_PRELOAD with lib first, unless it is already one of its entries
 * (separated by ':' or spaces, as ld.so reads it). */
static int preload_with(const char *lib, const char *old, char *out,
                        size_t cap, char *err, size_t ecap)
{
    size_t n = strlen(lib);
    const char *p = old;

    while (p != NULL && *p) {
        size_t w = strcspn(p, ": ");
        if (w == n && strncmp(p, lib, n) == 0) {
            if (strlen(old) >= cap)
                goto long_;
            memcpy(out, old, strlen(old) + 1);
            return 0;
        }
        p += w;
        p += strspn(p, ": ");
    }
    int len = (old != NULL && old[0] != '\0')
                  ? snprintf(out, cap, "%s:%s", lib, old)
                  : snprintf(out, cap, "%s", lib);
    if (len >= 0 && (size_t)len < cap)
        return 0;
long_:
    snprintf(err, ecap, "LD_PRELOAD of the task is longer than %zu "
             "characters; cannot add %s", cap - 1, lib);
    return -1;
}

/* The variables of one task (gm_spank_task_vars without the checks). */
static int build_vars(const struct gm_spank_site *site,
                      const struct gm_spank_job *job, uint32_t jobid,
                      uint32_t ntasks, const char *preload,
                      struct gm_spank_var *vars, char *err, size_t cap)
{
    const size_t vc = sizeof vars[0].value;
    int n = 0;

    if (job->mem.kind != GM_LIMIT_NONE) {
        struct gm_limit each = task_limit(job, ntasks);
        vars[n].name = "GPUMEM_LIMIT";
        gm_spank_limit_text(&each, 1.0, vars[n].value, vc);
        n++;
        vars[n].name = "GPUMEM_GROUP_LIMIT";
        gm_spank_limit_text(job->mixed ? &site->max : &job->mem, 1.0,
                            vars[n].value, vc);
        n++;
        /* A group needs a limit: a job without one has no group. */
        vars[n].name = "GPUMEM_GROUP";
        snprintf(vars[n].value, vc, GM_SPANK_GROUP_PREFIX "%u", (unsigned)jobid);
        n++;
    }
    vars[n].name = "GPUMEM_MODE";
    snprintf(vars[n].value, vc, "%s",
             gm_mode_name(job->pol.mode_set ? job->pol.mode : GM_MODE_GROW));
    n++;
    vars[n].name = "GPUMEM_ON_OOM";
    snprintf(vars[n].value, vc, "%s",
             job->pol.on_oom_set ? job->pol.on_oom_text : "fail");
    n++;
    vars[n].name = "GPUMEM_SHM_PREFIX";
    snprintf(vars[n].value, vc, "%s", site->prefix);
    n++;
    vars[n].name = "LD_PRELOAD";
    if (preload_with(site->lib, preload, vars[n].value, vc, err, cap) != 0)
        return -1;
    n++;
    return n;
}

int gm_spank_task_unset(const struct gm_spank_job *job,
                        struct gm_spank_unset *out)
{
    static const char *const unlimited[] = { "GPUMEM_LIMIT", "GPUMEM_GROUP",
                                             "GPUMEM_GROUP_LIMIT" };
    int n = 0, i;

    if (!job->active)
        return 0;
    for (i = 0; i < GM_MAX_DEVICES; i++)
        snprintf(out[n++].name, sizeof out[0].name, "GPUMEM_LIMIT_%d", i);
    if (job->mem.kind == GM_LIMIT_NONE)
        for (i = 0; i < 3; i++)
            snprintf(out[n++].name, sizeof out[0].name, "%s", unlimited[i]);
    return n;
}

/* The most tasks on a node whose variables the library accepts (the
 * task's own limit only shrinks as the count grows); 0 when not even one. */
static uint32_t most_tasks(const struct gm_spank_site *site,
                           const struct gm_spank_job *job)
{
    static struct gm_spank_var v[GM_SPANK_VARS];
    char why[8];
    uint32_t lo = 0, hi = UINT32_MAX;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2 + 1;
        int n = build_vars(site, job, 1, mid, NULL, v, why, sizeof why);
        if (n >= 0 && load_vars(v, n, true, why, sizeof why) == 0)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The refusal of a task's variables: the value, the task count, the
 * loader's reason and the most tasks the value allows. */
static void task_refusal(const struct gm_spank_site *site,
                         const struct gm_spank_job *job, uint32_t ntasks,
                         const char *why, char *err, size_t cap)
{
    uint32_t most = most_tasks(site, job);
    char more[160] = "";

    if (most > 0 && most < ntasks)
        snprintf(more, sizeof more, "; this --gpu-mem allows at most %u "
                 "task%s on a node: run fewer tasks per node or give a larger "
                 "--gpu-mem", (unsigned)most, most == 1 ? "" : "s");
    snprintf(err, cap, "--gpu-mem=%s with %u tasks on this node: each "
             "task's %s%s", job->mem_text[0] ? job->mem_text : "(none)",
             (unsigned)ntasks, why, more);
}

int gm_spank_task_vars(const struct gm_spank_site *site,
                       const struct gm_spank_job *job, uint32_t jobid,
                       uint32_t ntasks, const char *preload,
                       struct gm_spank_var *vars, char *err, size_t cap)
{
    static struct gm_spank_var v[GM_SPANK_VARS];
    char why[GM_SPANK_ERR_MAX];
    int n;

    if (!job->active)
        return 0;
    if (ntasks == 0)
        ntasks = 1;
    n = build_vars(site, job, jobid, ntasks, preload, v, err, cap);
    if (n < 0)
        return -1;
    if (load_vars(v, n, true, why, sizeof why) != 0) {
        task_refusal(site, job, ntasks, why, err, cap);
        return -1;
    }
    memcpy(vars, v, (size_t)n * sizeof v[0]);
    return n;
}
