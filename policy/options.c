/*
 * policy/options.c — the GPUMEM_* option table: for each variable, the
 * accepted forms (the "use ..." text of its messages) and the function
 * that parses and applies its value, with the limit forms (bytes, NN%,
 * share[:F] from the local rank count, to a part in a billion) they
 * share.
 *
 * Invariant: an apply function either stores a validated value (and marks
 * its source) or reports one message and leaves the default in place.
 */
#include "policy/policy_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "shim/base/shmfile.h"

static const char F_LIMIT[] =
    "use bytes, a number with K/M/G/T (binary units), NN%, share[:F], or none";
static const char F_STATIC[] =
    "use bytes, a number with K/M/G/T (binary units), or NN% of the limit";
static const char F_DURATION[] =
    "use a number with ns, us, ms, s, m or h (30s, 5m, 1500ms)";
static const char F_HEADROOM[] = "use NN% from 0% to 1000%";
static const char F_MODE[] = "use grow, static, or staged";
static const char F_ON_OOM[] =
    "use fail, wait, wait:DURATION (e.g. wait:30s), spill, or warn";
static const char F_GROUP[] =
    "use 1 to 64 characters from A-Z a-z 0-9 _ . -";
static const char F_PREFIX[] = "use " GM_SHM_PREFIX_RULE;
static const char F_SHM_DIR[] =
    "use an absolute directory path of at most 160 bytes, without . or .. "
    "components (e.g. /dev/shm or /run/gpumem)";
static const char F_PRIORITY[] =
    "use high, normal, low, or a weight from 0.1 to 10";
static const char F_REPORT[] = "use 0, 1, stderr, or json:PATH (%p = pid)";
static const char F_KEEP[] = "use 0 or 1";
static const char F_TELEMETRY[] =
    "use 1 (segment, stats, events, report) or 0 (limits only)";
static const char F_RING[] = "use a power of two from 1024 to 16777216";
static const char F_LOG[] = "use quiet, error, warn, info, or debug";
static const char F_WARN_BEFORE[] =
    "use a number with ns, us, ms, s, m or h (5m, 90s), or 0 (no warning)";
static const char F_LIBRARY[] =
    "use the file name or path of the real driver (e.g. libcuda.so.1)";
static const char F_BAD_CONFIG[] = "use exit or warn";
static const char F_RECORD[] =
    "use the path of a private directory (gpumem record sets it)";
static const char F_NVML_VIEW[] =
    "use 1 (NVML shows the limit) or 0 (NVML shows the physical device)";

/* Variables that give the number of local ranks for `share`, in order. */
static const char *const rank_vars[] = {
    "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
    "SLURM_NTASKS_PER_NODE", "HOROVOD_LOCAL_SIZE",
};

/* ---- small helpers ----------------------------------------------------- */

static bool starts_ci(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++) {
        char a = *s, b = *prefix;
        if (a >= 'A' && a <= 'Z')
            a = (char)(a - 'A' + 'a');
        if (a != b)
            return false;
    }
    return true;
}

const char *gm_pol_env_find(char *const *envp, const char *name)
{
    size_t n = strlen(name);

    for (; envp != NULL && *envp != NULL; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    return NULL;
}

struct word {
    const char *w;
    int v;
};

static bool match_word(const char *val, const struct word *ws, size_t n,
                       int *out)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (gm_ascii_ieq(val, ws[i].w)) {
            *out = ws[i].v;
            return true;
        }
    }
    return false;
}

static bool copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);

    if (n >= cap)
        return false;
    memcpy(dst, src, n + 1);
    return true;
}

/* ---- limits ------------------------------------------------------------ */

/* A limit takes its percentage or share fraction to 9 decimal places of
 * the fraction (parts per billion, gm_limit_resolve), and gpumem policy
 * shows it to as many: a smaller one would resolve to nothing, and is
 * refused as 0% is. */
#define FRACTION_MIN 1e-9
#define PCT_MIN 1e-7    /* FRACTION_MIN in percent, as "0.0000001" parses */

#define RANKS_MAX 1000000 /* the most local ranks `share` takes */

/* Local ranks for `share`: first rank variable present decides. */
static bool local_ranks(struct load *c, enum gm_field f, const char *name,
                        const char *val, unsigned *ranks)
{
    size_t i;

    for (i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        const char *r = gm_pol_env_find(c->envp, rank_vars[i]);
        char v[SHOW_MAX + 4], rv[SHOW_MAX + 4];
        uint64_t n = 0;
        if (r == NULL || r[0] == '\0')
            continue;
        if (gm_parse_uint_ex(r, &n, NULL) == GM_PERR_OK && n > 0 &&
            n <= RANKS_MAX) {
            *ranks = (unsigned)n;
            return true;
        }
        gm_pol_show(val, v, sizeof v);
        gm_pol_show(r, rv, sizeof rv);
        gm_pol_msg(c, true,
            "gpumem: %s='%s' needs the number of local ranks, but %s='%s' "
            "is not a whole number from 1 to %u; set it to the ranks on this "
            "node or unset it",
            name, v, rank_vars[i], rv, (unsigned)RANKS_MAX);
        c->bad[f] = true;
        return false;
    }
    *ranks = 1;
    return true;
}

static bool parse_share(struct load *c, enum gm_field f, const char *name,
                        const char *val, struct gm_limit *out)
{
    const char *fs = val + 5;
    double frac = 1.0;
    size_t junk = 0;
    unsigned ranks;

    if (*fs == ':') {
        enum gm_perr e = gm_parse_number_ex(fs + 1, &frac, &junk);
        if (e != GM_PERR_OK) {
            char what[WHAT_MAX + 64], sub[WHAT_MAX];
            gm_pol_perr_what(e, K_NUMBER, fs + 1, junk, sub, sizeof sub);
            snprintf(what, sizeof what, "has a share fraction that %s", sub);
            gm_pol_bad(c, f, name, val, what, F_LIMIT);
            return false;
        }
        if (!(frac > 0.0 && frac <= 1.0)) {
            gm_pol_bad(c, f, name, val, "has a share fraction outside (0, 1]",
                F_LIMIT);
            return false;
        }
        if (frac < FRACTION_MIN) {
            gm_pol_bad(c, f, name, val, "has a share fraction below "
                "0.000000001, the finest a limit is taken to", F_LIMIT);
            return false;
        }
    } else if (*fs != '\0') {
        gm_pol_bad(c, f, name, val, "is not a size", F_LIMIT);
        return false;
    }
    if (!local_ranks(c, f, name, val, &ranks))
        return false;
    out->kind = GM_LIMIT_SHARE;
    out->bytes = 0;
    out->fraction = frac;
    out->ranks = ranks;
    return true;
}

static bool parse_limit_pct(struct load *c, enum gm_field f, const char *name,
                            const char *val, struct gm_limit *out)
{
    size_t junk = 0;
    double pct = 0;
    enum gm_perr e = gm_parse_pct_ex(val, &pct, &junk);

    if (e != GM_PERR_OK) {
        gm_pol_bad_parse(c, f, name, val, e, K_PERCENT, junk, F_LIMIT);
        return false;
    }
    if (pct <= 0.0) {
        gm_pol_bad(c, f, name, val, "is 0%, which would allow no memory at all",
            F_LIMIT);
        return false;
    }
    if (pct < PCT_MIN) {
        gm_pol_bad(c, f, name, val, "is below 0.0000001% (one part in a "
            "billion), the finest a limit is taken to: it would allow no "
            "memory at all", F_LIMIT);
        return false;
    }
    if (pct > 100.0) {
        gm_pol_bad(c, f, name, val, "is above 100% of the device's memory",
            F_LIMIT);
        return false;
    }
    out->kind = GM_LIMIT_PERCENT;
    out->bytes = 0;
    out->fraction = pct / 100.0;
    out->ranks = 0;
    return true;
}

/* Every GPUMEM_LIMIT form; *out is written only on success. */
/* "0.5" (the fraction habit of TensorFlow and JAX users) as the
 * percentage it probably meant, "50", into buf; false when val is not a
 * plain decimal fraction below 1. */
static bool fraction_as_percent(const char *val, char *buf, size_t cap)
{
    const char *p = val;
    if (*p == '0')
        p++;
    if (*p != '.' || p[1] < '0' || p[1] > '9')
        return false;
    const char *d = p + 1;
    size_t n = strspn(d, "0123456789");
    if (d[n] != '\0' || n > 12 || strspn(d, "0") == n)
        return false;
    char two[3] = { d[0], n > 1 ? d[1] : '0', '\0' };
    int whole = (two[0] - '0') * 10 + (two[1] - '0');
    snprintf(buf, cap, n > 2 ? "%d.%s" : "%d", whole, d + 2);
    return true;
}

bool gm_pol_parse_limit(struct load *c, enum gm_field f, const char *name,
                        const char *val, struct gm_limit *out)
{
    struct gm_limit l = { GM_LIMIT_NONE, 0, 0.0, 0 };
    size_t junk = 0;
    uint64_t b = 0;
    enum gm_perr e;

    if (gm_ascii_ieq(val, "none") || gm_ascii_ieq(val, "unlimited")) {
        *out = l;
        return true;
    }
    if (starts_ci(val, "share"))
        return parse_share(c, f, name, val, out);
    if (strchr(val, '%') != NULL)
        return parse_limit_pct(c, f, name, val, out);
    e = gm_parse_size_ex(val, &b, &junk);
    char pct[32];
    if (e == GM_PERR_FRACTION && fraction_as_percent(val, pct, sizeof pct)) {
        char what[WHAT_MAX];
        snprintf(what, sizeof what, "is a fraction of a byte (did you mean "
                 "%s%%? a share of the device is written as a percentage)",
                 pct);
        gm_pol_bad(c, f, name, val, what, F_LIMIT);
        return false;
    }
    if (e != GM_PERR_OK) {
        gm_pol_bad_parse(c, f, name, val, e, K_SIZE, junk, F_LIMIT);
        return false;
    }
    if (b != 0) {
        l.kind = GM_LIMIT_BYTES;
        l.bytes = b;
    }
    *out = l;
    return true;
}

/* ---- the variables ----------------------------------------------------- */


static bool apply_limit(struct load *c, enum gm_field f, const char *name,
                        const char *val)
{
    return gm_pol_parse_limit(c, f, name, val, &c->p->limit);
}

static bool apply_group_limit(struct load *c, enum gm_field f,
                              const char *name, const char *val)
{
    return gm_pol_parse_limit(c, f, name, val, &c->p->group_limit);
}

static bool apply_mode(struct load *c, enum gm_field f, const char *name,
                       const char *val)
{
    static const struct word ws[] = { { "grow", GM_MODE_GROW },
                                      { "static", GM_MODE_STATIC },
                                      { "staged", GM_MODE_STAGED } };
    int v;

    if (!match_word(val, ws, 3, &v)) {
        gm_pol_bad(c, f, name, val, val[0] ? "is not a mode" : "is empty", F_MODE);
        return false;
    }
    c->p->mode = (enum gm_mode)v;
    return true;
}

static bool apply_static_size(struct load *c, enum gm_field f,
                              const char *name, const char *val)
{
    size_t junk = 0;
    uint64_t b = 0;
    double pct = 0;
    enum gm_perr e;

    if (strchr(val, '%') != NULL) {
        e = gm_parse_pct_ex(val, &pct, &junk);
        if (e != GM_PERR_OK) {
            gm_pol_bad_parse(c, f, name, val, e, K_PERCENT, junk, F_STATIC);
            return false;
        }
        if (pct <= 0.0 || pct > 100.0) {
            gm_pol_bad(c, f, name, val,
                pct <= 0.0 ? "is 0% of the limit"
                           : "is above 100% of the limit",
                F_STATIC);
            return false;
        }
        if (pct < PCT_MIN) {
            gm_pol_bad(c, f, name, val, "is below 0.0000001% of the limit, "
                "the finest a size is taken to", F_STATIC);
            return false;
        }
        c->p->static_size.kind = GM_LIMIT_PERCENT;
        c->p->static_size.fraction = pct / 100.0;
        return true;
    }
    e = gm_parse_size_ex(val, &b, &junk);
    if (e == GM_PERR_OK && b == 0)
        e = GM_PERR_ZERO;
    if (e != GM_PERR_OK) {
        gm_pol_bad_parse(c, f, name, val, e, K_SIZE, junk, F_STATIC);
        return false;
    }
    c->p->static_size.kind = GM_LIMIT_BYTES;
    c->p->static_size.bytes = b;
    return true;
}

static bool parse_duration(struct load *c, enum gm_field f, const char *name,
                           const char *val, const char *dv, uint64_t *out,
                           const char *forms)
{
    size_t junk = 0;
    enum gm_perr e = gm_parse_duration_ex(dv, out, &junk);

    if (e == GM_PERR_OK)
        return true;
    if (dv == val) {
        gm_pol_bad_parse(c, f, name, val, e, K_DURATION, junk, forms);
    } else {
        char what[WHAT_MAX + 64], sub[WHAT_MAX];
        gm_pol_perr_what(e, K_DURATION, dv, junk, sub, sizeof sub);
        snprintf(what, sizeof what, "has a wait duration that %s", sub);
        gm_pol_bad(c, f, name, val, what, forms);
    }
    return false;
}

static bool apply_warmup(struct load *c, enum gm_field f, const char *name,
                         const char *val)
{
    return parse_duration(c, f, name, val, val, &c->p->warmup_ns,
                          F_DURATION);
}

static bool apply_headroom(struct load *c, enum gm_field f, const char *name,
                           const char *val)
{
    size_t junk = 0;
    double pct = 0;
    enum gm_perr e = gm_parse_pct_ex(val, &pct, &junk);

    if (e != GM_PERR_OK) {
        gm_pol_bad_parse(c, f, name, val, e, K_PERCENT, junk, F_HEADROOM);
        return false;
    }
    if (pct > 1000.0) {
        gm_pol_bad(c, f, name, val, "is above 1000%", F_HEADROOM);
        return false;
    }
    c->p->headroom = pct / 100.0;
    return true;
}

static bool apply_on_oom(struct load *c, enum gm_field f, const char *name,
                         const char *val)
{
    static const struct word ws[] = { { "fail", GM_OOM_FAIL },
                                      { "wait", GM_OOM_WAIT },
                                      { "spill", GM_OOM_SPILL },
                                      { "warn", GM_OOM_WARN } };
    uint64_t ns = 0;
    int v;

    if (match_word(val, ws, 4, &v)) {
        c->p->on_oom = (enum gm_on_oom)v;
        return true;
    }
    if (!starts_ci(val, "wait:")) {
        gm_pol_bad(c, f, name, val,
            val[0] ? "is not an out-of-memory policy" : "is empty", F_ON_OOM);
        return false;
    }
    if (!parse_duration(c, f, name, val, val + 5, &ns, F_ON_OOM))
        return false;
    c->p->on_oom = GM_OOM_WAIT;
    c->p->oom_wait_ns = ns;
    return true;
}

bool gm_pol_check_name(struct load *c, enum gm_field f, const char *name,
                       const char *val, size_t max, const char *forms)
{
    char buf[GM_NAME_WHY];
    const char *why = gm_name_problem(val, max, buf, sizeof buf);

    if (why != NULL)
        gm_pol_bad(c, f, name, val, why, forms);
    return why == NULL;
}

static bool apply_group(struct load *c, enum gm_field f, const char *name,
                        const char *val)
{
    if (!gm_pol_check_name(c, f, name, val, GM_NAME_MAX, F_GROUP))
        return false;
    return copy_str(c->p->group, sizeof c->p->group, val);
}

static bool apply_prefix(struct load *c, enum gm_field f, const char *name,
                         const char *val)
{
    char buf[GM_NAME_WHY];
    const char *why = gm_shm_prefix_problem(val, buf, sizeof buf);

    if (why != NULL) {
        gm_pol_bad(c, f, name, val, why, F_PREFIX);
        return false;
    }
    return copy_str(c->p->shm_prefix, sizeof c->p->shm_prefix, val);
}

/* Whether the directory exists and is safe is checked where it is used
 * (gm_shm_dir_check, shim/base/shmfile.h). */
static bool apply_shm_dir(struct load *c, enum gm_field f, const char *name,
                          const char *val)
{
    const char *why = NULL;
    if (gm_parse_shm_dir(val, c->p->shm_dir, sizeof c->p->shm_dir, &why)) {
        gm_pol_bad(c, f, name, val, why, F_SHM_DIR);
        return false;
    }
    return true;
}

static bool apply_priority(struct load *c, enum gm_field f, const char *name,
                           const char *val)
{
    static const struct word ws[] = { { "high", 15 }, { "normal", 10 },
                                      { "low", 7 } };
    size_t junk = 0;
    double w = 0;
    int v;
    enum gm_perr e;

    if (match_word(val, ws, 3, &v)) {
        c->p->priority = v / 10.0;
        return true;
    }
    bool inside = false;
    e = gm_parse_number_in(val, 1, 100, 10, &w, &inside, &junk);
    if (e == GM_PERR_SYNTAX) {
        gm_pol_bad(c, f, name, val, "is not a priority", F_PRIORITY);
        return false;
    }
    if (e != GM_PERR_OK) {
        gm_pol_bad_parse(c, f, name, val, e, K_NUMBER, junk, F_PRIORITY);
        return false;
    }
    if (!inside) {   /* 0.1 to 10 as written, not as rounded */
        gm_pol_bad(c, f, name, val, "is outside 0.1-10", F_PRIORITY);
        return false;
    }
    c->p->priority = w;
    return true;
}

static bool apply_report(struct load *c, enum gm_field f, const char *name,
                         const char *val)
{
    if (strcmp(val, "0") == 0) {
        c->p->report = GM_REPORT_NONE;
        return true;
    }
    if (strcmp(val, "1") == 0 || gm_ascii_ieq(val, "stderr")) {
        c->p->report = GM_REPORT_STDERR;
        return true;
    }
    if (!starts_ci(val, "json:")) {
        gm_pol_bad(c, f, name, val, val[0] ? "is not a report target" : "is empty",
            F_REPORT);
        return false;
    }
    if (val[5] == '\0') {
        gm_pol_bad(c, f, name, val, "has an empty path", F_REPORT);
        return false;
    }
    if (!copy_str(c->p->report_path, sizeof c->p->report_path, val + 5)) {
        gm_pol_bad(c, f, name, val, "has a path longer than 4095 bytes", F_REPORT);
        return false;
    }
    c->p->report = GM_REPORT_JSON;
    return true;
}

static bool apply_keep(struct load *c, enum gm_field f, const char *name,
                       const char *val)
{
    if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0) {
        gm_pol_bad(c, f, name, val, val[0] ? "is not 0 or 1" : "is empty", F_KEEP);
        return false;
    }
    c->p->keep = val[0] == '1';
    return true;
}

static bool apply_nvml_view(struct load *c, enum gm_field f, const char *name,
                            const char *val)
{
    if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0) {
        gm_pol_bad(c, f, name, val, val[0] ? "is not 0 or 1" : "is empty",
                   F_NVML_VIEW);
        return false;
    }
    c->p->nvml_view = val[0] == '1';
    return true;
}

static bool apply_telemetry(struct load *c, enum gm_field f, const char *name,
                            const char *val)
{
    if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0) {
        gm_pol_bad(c, f, name, val, val[0] ? "is not 0 or 1" : "is empty",
            F_TELEMETRY);
        return false;
    }
    c->p->telemetry = val[0] == '1';
    return true;
}

static bool apply_ring(struct load *c, enum gm_field f, const char *name,
                       const char *val)
{
    size_t junk = 0;
    uint64_t n = 0;
    enum gm_perr e = gm_parse_uint_ex(val, &n, &junk);

    if (e != GM_PERR_OK) {
        gm_pol_bad_parse(c, f, name, val, e, K_INT, junk, F_RING);
        return false;
    }
    if (n < 1024 || n > 16777216) {
        gm_pol_bad(c, f, name, val, "is outside 1024-16777216", F_RING);
        return false;
    }
    if ((n & (n - 1)) != 0) {
        gm_pol_bad(c, f, name, val, "is not a power of two", F_RING);
        return false;
    }
    c->p->ring_events = (uint32_t)n;
    return true;
}

static bool apply_log(struct load *c, enum gm_field f, const char *name,
                      const char *val)
{
    static const struct word ws[] = {
        { "quiet", GM_LOG_QUIET }, { "error", GM_LOG_ERROR },
        { "warn", GM_LOG_WARN },   { "info", GM_LOG_INFO },
        { "debug", GM_LOG_DEBUG },
    };
    int v;

    if (!match_word(val, ws, 5, &v)) {
        gm_pol_bad(c, f, name, val, val[0] ? "is not a log level" : "is empty",
            F_LOG);
        return false;
    }
    c->p->log_level = (enum gm_log)v;
    return true;
}

static bool apply_warn_before(struct load *c, enum gm_field f,
                              const char *name, const char *val)
{
    if (strcmp(val, "0") == 0) {
        c->p->warn_before_ns = 0;
        return true;
    }
    return parse_duration(c, f, name, val, val, &c->p->warn_before_ns,
                          F_WARN_BEFORE);
}

static bool apply_library(struct load *c, enum gm_field f, const char *name,
                          const char *val)
{
    if (val[0] == '\0') {
        gm_pol_bad(c, f, name, val, "is empty", F_LIBRARY);
        return false;
    }
    if (!copy_str(c->p->cuda_library, sizeof c->p->cuda_library, val)) {
        gm_pol_bad(c, f, name, val, "is longer than 4095 bytes", F_LIBRARY);
        return false;
    }
    return true;
}

static bool apply_bad_config(struct load *c, enum gm_field f,
                             const char *name, const char *val)
{
    static const struct word ws[] = { { "exit", GM_BAD_EXIT },
                                      { "warn", GM_BAD_WARN } };
    int v;

    if (!match_word(val, ws, 2, &v)) {
        gm_pol_bad(c, f, name, val, val[0] ? "is not exit or warn" : "is empty",
            F_BAD_CONFIG);
        return false;
    }
    c->p->on_bad_config = (enum gm_bad_config)v;
    return true;
}

static bool apply_record(struct load *c, enum gm_field f, const char *name,
                         const char *val)
{
    if (val[0] != '/') {
        gm_pol_bad(c, f, name, val, val[0] ? "is not an absolute path"
                                           : "is empty", F_RECORD);
        return false;
    }
    if (!copy_str(c->p->record_dir, sizeof c->p->record_dir, val)) {
        gm_pol_bad(c, f, name, val, "is longer than 4095 bytes", F_RECORD);
        return false;
    }
    return true;
}

/* Application order: limits before the checks that compare against them. */
const struct gm_pol_option gm_pol_table[] = {
    { GM_F_LIMIT, apply_limit },
    { GM_F_MODE, apply_mode },
    { GM_F_STATIC_SIZE, apply_static_size },
    { GM_F_WARMUP, apply_warmup },
    { GM_F_HEADROOM, apply_headroom },
    { GM_F_ON_OOM, apply_on_oom },
    { GM_F_GROUP, apply_group },
    { GM_F_GROUP_LIMIT, apply_group_limit },
    { GM_F_PRIORITY, apply_priority },
    { GM_F_REPORT, apply_report },
    { GM_F_KEEP, apply_keep },
    { GM_F_TELEMETRY, apply_telemetry },
    { GM_F_RING_EVENTS, apply_ring },
    { GM_F_SHM_PREFIX, apply_prefix },
    { GM_F_SHM_DIR, apply_shm_dir },
    { GM_F_LOG_LEVEL, apply_log },
    { GM_F_WARN_BEFORE, apply_warn_before },
    { GM_F_CUDA_LIBRARY, apply_library },
    { GM_F_ON_BAD_CONFIG, apply_bad_config },
    { GM_F_RECORD, apply_record },
    { GM_F_NVML_VIEW, apply_nvml_view },
};
const size_t gm_pol_table_len = sizeof gm_pol_table / sizeof gm_pol_table[0];
