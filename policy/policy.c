/*
 * policy/policy.c — the GPUMEM_* variable table: loading an environment
 * array into struct gm_policy with one precise message per bad value, the
 * cross-variable checks, limit resolution, and the effective-policy print.
 *
 * Invariants: gm_policy_load() never calls getenv() and never allocates; it
 * is safe inside the preloaded library at first CUDA use. Every field of
 * the policy is valid after a load, even a failed one: a refused variable
 * keeps its default and its source stays GM_SRC_DEFAULT. Messages are one
 * line each, "gpumem: NAME='VALUE' what is wrong; use <accepted forms>",
 * with the value sanitised (control characters -> '?') and shortened.
 * snprintf is used with integer and string conversions only.
 */
#include "policy/policy.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "policy/parse.h"

#define PFX "GPUMEM_"
#define PFX_LEN 7
#define SHOW_MAX 80          /* value characters quoted in a message */
#define NAME_SHOW_MAX 80     /* variable-name characters in a message */
#define LINE_MAX_ 1024
#define WHAT_MAX (2 * SHOW_MAX + 64)   /* "what is wrong" phrases */

#define NS_PER_S 1000000000ull
#define VALUE_COL 34         /* text form: width of the value column */

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
static const char F_PREFIX[] =
    "use 1 to 32 characters from A-Z a-z 0-9 _ . -";
static const char F_PRIORITY[] =
    "use high, normal, low, or a weight from 0.1 to 10";
static const char F_REPORT[] = "use 0, 1, stderr, or json:PATH (%p = pid)";
static const char F_KEEP[] = "use 0 or 1";
static const char F_TELEMETRY[] =
    "use 1 (segment, stats, events, report) or 0 (limits only)";
static const char F_RING[] = "use a power of two from 1024 to 16777216";
static const char F_LOG[] = "use quiet, error, warn, info, or debug";
static const char F_LIBRARY[] =
    "use the file name or path of the real driver (e.g. libcuda.so.1)";
static const char F_BAD_CONFIG[] = "use exit or warn";
static const char F_DEVICE[] =
    "use GPUMEM_LIMIT_<N> with N a device ordinal from 0 to 63";

/* Variables that give the number of local ranks for `share`, in order. */
static const char *const rank_vars[] = {
    "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
    "SLURM_NTASKS_PER_NODE", "HOROVOD_LOCAL_SIZE",
};

static const char *const field_names[GM_F_COUNT] = {
    [GM_F_LIMIT] = "GPUMEM_LIMIT",
    [GM_F_LIMIT_N] = "GPUMEM_LIMIT_<N>",
    [GM_F_MODE] = "GPUMEM_MODE",
    [GM_F_STATIC_SIZE] = "GPUMEM_STATIC_SIZE",
    [GM_F_WARMUP] = "GPUMEM_WARMUP",
    [GM_F_HEADROOM] = "GPUMEM_HEADROOM",
    [GM_F_ON_OOM] = "GPUMEM_ON_OOM",
    [GM_F_GROUP] = "GPUMEM_GROUP",
    [GM_F_GROUP_LIMIT] = "GPUMEM_GROUP_LIMIT",
    [GM_F_PRIORITY] = "GPUMEM_PRIORITY",
    [GM_F_REPORT] = "GPUMEM_REPORT",
    [GM_F_KEEP] = "GPUMEM_KEEP",
    [GM_F_TELEMETRY] = "GPUMEM_TELEMETRY",
    [GM_F_RING_EVENTS] = "GPUMEM_RING_EVENTS",
    [GM_F_SHM_PREFIX] = "GPUMEM_SHM_PREFIX",
    [GM_F_LOG_LEVEL] = "GPUMEM_LOG_LEVEL",
    [GM_F_CUDA_LIBRARY] = "GPUMEM_CUDA_LIBRARY",
    [GM_F_ON_BAD_CONFIG] = "GPUMEM_ON_BAD_CONFIG",
};

/* State of one load. Value pointers point into the caller's envp. */
struct load {
    struct gm_policy *p;
    struct gm_diag *d;
    char *const *envp;
    const char *val[GM_F_COUNT];            /* first value seen, or NULL */
    const char *dev_val[GM_MAX_DEVICES];
    bool bad[GM_F_COUNT];                   /* refused: default kept */
};

/* Kinds of parsed text, for wording parse errors. */
enum kind { K_SIZE, K_DURATION, K_NUMBER, K_INT, K_PERCENT };

/* ---- diagnostics ------------------------------------------------------- */

static const char DIAG_MORE[] = "gpumem: (further messages dropped)\n";

static bool ends_with(const char *s, size_t len, const char *tail)
{
    size_t n = strlen(tail);
    return len >= n && memcmp(s + len - n, tail, n) == 0;
}

/* Append one line (ending in '\n'); keeps room for the "dropped" marker. */
static void diag_add(struct gm_diag *d, bool error, const char *line)
{
    size_t n = strlen(line);

    if (error)
        d->errors++;
    else
        d->warnings++;
    if (d->len + n + sizeof DIAG_MORE <= sizeof d->text) {
        memcpy(d->text + d->len, line, n + 1);
        d->len += n;
        return;
    }
    if (!ends_with(d->text, d->len, DIAG_MORE) &&
        d->len + sizeof DIAG_MORE <= sizeof d->text) {
        memcpy(d->text + d->len, DIAG_MORE, sizeof DIAG_MORE);
        d->len += sizeof DIAG_MORE - 1;
    }
}

static void diag_reset(struct gm_diag *d)
{
    d->errors = 0;
    d->warnings = 0;
    d->len = 0;
    d->text[0] = '\0';
}

/* Copy at most `max` characters of s[0..len) into out, control characters
 * and non-ASCII bytes shown as '?', "..." when shortened. */
static void show_n(const char *s, size_t len, size_t max, char *out,
                   size_t cap)
{
    size_t i, o = 0;

    for (i = 0; i < len && i < max && o + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        out[o++] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
    }
    if (i < len && o + 3 < cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

static void show(const char *s, char *out, size_t cap)
{
    show_n(s, strlen(s), SHOW_MAX, out, cap);
}

/* Ensure a formatted line, possibly truncated by snprintf, ends in '\n'. */
static void end_line(char *line, size_t cap, int n)
{
    size_t len = n < 0 ? 0 : (size_t)n;

    if (len >= cap - 1)
        len = cap - 2;
    line[len] = '\n';
    line[len + 1] = '\0';
}

static void msg(struct load *c, bool error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void msg(struct load *c, bool error, const char *fmt, ...)
{
    char line[LINE_MAX_];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    end_line(line, sizeof line, n);
    diag_add(c->d, error, line);
}

/* "gpumem: NAME='VALUE' WHAT; FORMS" and mark the field refused. */
static void bad(struct load *c, enum gm_field f, const char *name,
                const char *val, const char *what, const char *forms)
{
    char v[SHOW_MAX + 4];

    show(val, v, sizeof v);
    msg(c, true, "gpumem: %.*s='%s' %s; %s", NAME_SHOW_MAX, name, v, what,
        forms);
    c->bad[f] = true;
}

/* Words for a parse error of a given kind, into buf. */
static void perr_what(enum gm_perr e, enum kind k, const char *val,
                      size_t junk, char *buf, size_t cap)
{
    static const char *const noun[] = { "size", "duration", "number",
                                        "whole number", "percentage" };
    char a[SHOW_MAX + 4], b[SHOW_MAX + 4];

    switch (e) {
    case GM_PERR_TRAILING:
        show(val + junk, a, sizeof a);
        show_n(val, junk, SHOW_MAX, b, sizeof b);
        snprintf(buf, cap, "has unexpected text '%s' after '%s'", a, b);
        return;
    case GM_PERR_SYNTAX:
        snprintf(buf, cap, "is not a %s", noun[k]);
        return;
    case GM_PERR_OVERFLOW:
        snprintf(buf, cap, "%s",
                 k == K_SIZE ? "is too large (more than 16 EiB)"
                 : k == K_DURATION ? "is too large (more than 584 years)"
                                   : "is too large");
        return;
    case GM_PERR_NO_UNIT:
        snprintf(buf, cap, "%s",
                 k == K_PERCENT ? "is not a percentage (no '%' sign)"
                                : "has no unit");
        return;
    case GM_PERR_ZERO:
        snprintf(buf, cap, "%s", k == K_DURATION ? "is not longer than zero"
                                                  : "is zero");
        return;
    case GM_PERR_FRACTION:
        snprintf(buf, cap, "%s", k == K_SIZE ? "is a fraction of a byte"
                                             : "is not a whole number");
        return;
    default:
        snprintf(buf, cap, "%s", gm_perr_phrase(e));
        return;
    }
}

static void bad_parse(struct load *c, enum gm_field f, const char *name,
                      const char *val, enum gm_perr e, enum kind k,
                      size_t junk, const char *forms)
{
    char what[WHAT_MAX];

    perr_what(e, k, val, junk, what, sizeof what);
    bad(c, f, name, val, what, forms);
}

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

/* First value of `name` in envp, or NULL. */
static const char *env_find(char *const *envp, const char *name)
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

/* Local ranks for `share`: first rank variable present decides. */
static bool local_ranks(struct load *c, enum gm_field f, const char *name,
                        const char *val, unsigned *ranks)
{
    size_t i;

    for (i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        const char *r = env_find(c->envp, rank_vars[i]);
        char v[SHOW_MAX + 4], rv[SHOW_MAX + 4];
        uint64_t n = 0;
        if (r == NULL || r[0] == '\0')
            continue;
        if (gm_parse_uint_ex(r, &n, NULL) == GM_PERR_OK && n > 0 &&
            n <= 1000000) {
            *ranks = (unsigned)n;
            return true;
        }
        show(val, v, sizeof v);
        show(r, rv, sizeof rv);
        msg(c, true,
            "gpumem: %s='%s' needs the number of local ranks, but %s='%s' "
            "is not a positive integer; set it to the ranks on this node or "
            "unset it",
            name, v, rank_vars[i], rv);
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
            perr_what(e, K_NUMBER, fs + 1, junk, sub, sizeof sub);
            snprintf(what, sizeof what, "has a share fraction that %s", sub);
            bad(c, f, name, val, what, F_LIMIT);
            return false;
        }
        if (!(frac > 0.0 && frac <= 1.0)) {
            bad(c, f, name, val, "has a share fraction outside (0, 1]",
                F_LIMIT);
            return false;
        }
    } else if (*fs != '\0') {
        bad(c, f, name, val, "is not a size", F_LIMIT);
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
        bad_parse(c, f, name, val, e, K_PERCENT, junk, F_LIMIT);
        return false;
    }
    if (pct <= 0.0) {
        bad(c, f, name, val, "is 0%, which would allow no memory at all",
            F_LIMIT);
        return false;
    }
    if (pct > 100.0) {
        bad(c, f, name, val, "is above 100% of the device's memory",
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
static bool parse_limit(struct load *c, enum gm_field f, const char *name,
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
    if (e != GM_PERR_OK) {
        bad_parse(c, f, name, val, e, K_SIZE, junk, F_LIMIT);
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

typedef bool (*apply_fn)(struct load *c, enum gm_field f, const char *name,
                         const char *val);

static bool apply_limit(struct load *c, enum gm_field f, const char *name,
                        const char *val)
{
    return parse_limit(c, f, name, val, &c->p->limit);
}

static bool apply_group_limit(struct load *c, enum gm_field f,
                              const char *name, const char *val)
{
    return parse_limit(c, f, name, val, &c->p->group_limit);
}

static bool apply_mode(struct load *c, enum gm_field f, const char *name,
                       const char *val)
{
    static const struct word ws[] = { { "grow", GM_MODE_GROW },
                                      { "static", GM_MODE_STATIC },
                                      { "staged", GM_MODE_STAGED } };
    int v;

    if (!match_word(val, ws, 3, &v)) {
        bad(c, f, name, val, val[0] ? "is not a mode" : "is empty", F_MODE);
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
            bad_parse(c, f, name, val, e, K_PERCENT, junk, F_STATIC);
            return false;
        }
        if (pct <= 0.0 || pct > 100.0) {
            bad(c, f, name, val,
                pct <= 0.0 ? "is 0% of the limit"
                           : "is above 100% of the limit",
                F_STATIC);
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
        bad_parse(c, f, name, val, e, K_SIZE, junk, F_STATIC);
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
        bad_parse(c, f, name, val, e, K_DURATION, junk, forms);
    } else {
        char what[WHAT_MAX + 64], sub[WHAT_MAX];
        perr_what(e, K_DURATION, dv, junk, sub, sizeof sub);
        snprintf(what, sizeof what, "has a wait duration that %s", sub);
        bad(c, f, name, val, what, forms);
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
        bad_parse(c, f, name, val, e, K_PERCENT, junk, F_HEADROOM);
        return false;
    }
    if (pct > 1000.0) {
        bad(c, f, name, val, "is above 1000%", F_HEADROOM);
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
        bad(c, f, name, val,
            val[0] ? "is not an out-of-memory policy" : "is empty", F_ON_OOM);
        return false;
    }
    if (!parse_duration(c, f, name, val, val + 5, &ns, F_ON_OOM))
        return false;
    c->p->on_oom = GM_OOM_WAIT;
    c->p->oom_wait_ns = ns;
    return true;
}

/* [A-Za-z0-9_.-]{1,max} */
static bool check_name(struct load *c, enum gm_field f, const char *name,
                       const char *val, size_t max, const char *forms)
{
    char what[96];
    size_t i, n = strlen(val);

    if (n == 0) {
        bad(c, f, name, val, "is empty", forms);
        return false;
    }
    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)val[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
            (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-')
            continue;
        if (ch < 0x21 || ch >= 0x7f)
            snprintf(what, sizeof what,
                     "contains a space, control or non-ASCII character");
        else
            snprintf(what, sizeof what, "contains '%c', which is not allowed",
                     ch);
        bad(c, f, name, val, what, forms);
        return false;
    }
    if (n > max) {
        snprintf(what, sizeof what, "is longer than %u characters",
                 (unsigned)max);
        bad(c, f, name, val, what, forms);
        return false;
    }
    return true;
}

static bool apply_group(struct load *c, enum gm_field f, const char *name,
                        const char *val)
{
    if (!check_name(c, f, name, val, GM_NAME_MAX, F_GROUP))
        return false;
    return copy_str(c->p->group, sizeof c->p->group, val);
}

static bool apply_prefix(struct load *c, enum gm_field f, const char *name,
                         const char *val)
{
    if (!check_name(c, f, name, val, GM_PREFIX_MAX, F_PREFIX))
        return false;
    return copy_str(c->p->shm_prefix, sizeof c->p->shm_prefix, val);
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
    e = gm_parse_number_ex(val, &w, &junk);
    if (e == GM_PERR_SYNTAX) {
        bad(c, f, name, val, "is not a priority", F_PRIORITY);
        return false;
    }
    if (e != GM_PERR_OK) {
        bad_parse(c, f, name, val, e, K_NUMBER, junk, F_PRIORITY);
        return false;
    }
    if (w < 0.1 || w > 10.0) {
        bad(c, f, name, val, "is outside 0.1-10", F_PRIORITY);
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
        bad(c, f, name, val, val[0] ? "is not a report target" : "is empty",
            F_REPORT);
        return false;
    }
    if (val[5] == '\0') {
        bad(c, f, name, val, "has an empty path", F_REPORT);
        return false;
    }
    if (!copy_str(c->p->report_path, sizeof c->p->report_path, val + 5)) {
        bad(c, f, name, val, "has a path longer than 4095 bytes", F_REPORT);
        return false;
    }
    c->p->report = GM_REPORT_JSON;
    return true;
}

static bool apply_keep(struct load *c, enum gm_field f, const char *name,
                       const char *val)
{
    if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0) {
        bad(c, f, name, val, val[0] ? "is not 0 or 1" : "is empty", F_KEEP);
        return false;
    }
    c->p->keep = val[0] == '1';
    return true;
}

static bool apply_telemetry(struct load *c, enum gm_field f, const char *name,
                            const char *val)
{
    if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0) {
        bad(c, f, name, val, val[0] ? "is not 0 or 1" : "is empty",
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
        bad_parse(c, f, name, val, e, K_INT, junk, F_RING);
        return false;
    }
    if (n < 1024 || n > 16777216) {
        bad(c, f, name, val, "is outside 1024-16777216", F_RING);
        return false;
    }
    if ((n & (n - 1)) != 0) {
        bad(c, f, name, val, "is not a power of two", F_RING);
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
        bad(c, f, name, val, val[0] ? "is not a log level" : "is empty",
            F_LOG);
        return false;
    }
    c->p->log_level = (enum gm_log)v;
    return true;
}

static bool apply_library(struct load *c, enum gm_field f, const char *name,
                          const char *val)
{
    if (val[0] == '\0') {
        bad(c, f, name, val, "is empty", F_LIBRARY);
        return false;
    }
    if (!copy_str(c->p->cuda_library, sizeof c->p->cuda_library, val)) {
        bad(c, f, name, val, "is longer than 4095 bytes", F_LIBRARY);
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
        bad(c, f, name, val, val[0] ? "is not exit or warn" : "is empty",
            F_BAD_CONFIG);
        return false;
    }
    c->p->on_bad_config = (enum gm_bad_config)v;
    return true;
}

/* Application order: limits before the checks that compare against them. */
static const struct {
    enum gm_field f;
    apply_fn apply;
} table[] = {
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
    { GM_F_LOG_LEVEL, apply_log },
    { GM_F_CUDA_LIBRARY, apply_library },
    { GM_F_ON_BAD_CONFIG, apply_bad_config },
};
#define TABLE_LEN (sizeof table / sizeof table[0])

/* ---- collecting the environment ---------------------------------------- */

/* GPUMEM_LIMIT_<N>: N decimal, no leading zero, below GM_MAX_DEVICES. */
static void collect_dev(struct load *c, const char *entry, size_t nlen,
                        const char *val)
{
    static const size_t base = sizeof "GPUMEM_LIMIT_" - 1;
    char name[NAME_SHOW_MAX + 4], n_show[NAME_SHOW_MAX + 4], what[160];
    const char *ns = entry + base;
    size_t nl = nlen - base, i;
    unsigned dev = 0;
    bool ok = nl > 0 && nl <= 2 && !(nl > 1 && ns[0] == '0');

    for (i = 0; ok && i < nl; i++) {
        if (ns[i] < '0' || ns[i] > '9')
            ok = false;
        else
            dev = dev * 10 + (unsigned)(ns[i] - '0');
    }
    if (ok && dev < GM_MAX_DEVICES) {
        if (c->dev_val[dev] == NULL)
            c->dev_val[dev] = val;
        return;
    }
    show_n(entry, nlen, NAME_SHOW_MAX, name, sizeof name);
    show_n(ns, nl, NAME_SHOW_MAX, n_show, sizeof n_show);
    snprintf(what, sizeof what, "names device '%s', which is not a device "
             "ordinal from 0 to 63", n_show);
    bad(c, GM_F_LIMIT_N, name, val, what, F_DEVICE);
}

static void warn_unknown(struct load *c, const char *entry, size_t nlen)
{
    const char *cand[GM_F_COUNT + 1];
    char word[NAME_SHOW_MAX + 4], name[NAME_SHOW_MAX + 4], dev[32];
    const char *best = NULL;
    size_t i, k = 0, wl = nlen - PFX_LEN, d = wl;
    unsigned max;

    show_n(entry, nlen, NAME_SHOW_MAX, name, sizeof name);
    for (i = 0; i < GM_F_COUNT; i++)
        if (i != GM_F_LIMIT_N)
            cand[k++] = field_names[i] + PFX_LEN;
    /* "..._3"-like typos are compared with GPUMEM_LIMIT_3. */
    while (d > 0 && entry[PFX_LEN + d - 1] >= '0' &&
           entry[PFX_LEN + d - 1] <= '9')
        d--;
    if (d < wl && d > 0 && entry[PFX_LEN + d - 1] == '_' && wl - d <= 8) {
        snprintf(dev, sizeof dev, "LIMIT_%.*s", (int)(wl - d),
                 entry + PFX_LEN + d);
        cand[k++] = dev;
    }
    if (wl <= NAME_SHOW_MAX) {
        memcpy(word, entry + PFX_LEN, wl);
        word[wl] = '\0';
        max = wl <= 4 ? 1 : wl <= 8 ? 2 : 3;
        best = gm_closest_name(word, cand, k, max);
    }
    if (best != NULL)
        msg(c, false, "gpumem: unknown variable %s; did you mean " PFX "%s?",
            name, best);
    else
        msg(c, false, "gpumem: unknown variable %s (ignored); 'gpumem help "
            "policy' lists the known variables", name);
}

static void collect(struct load *c)
{
    char *const *e;
    size_t i;

    for (e = c->envp; e != NULL && *e != NULL; e++) {
        const char *entry = *e, *eq;
        size_t nlen;
        bool known = false;
        if (strncmp(entry, PFX, PFX_LEN) != 0 ||
            (eq = strchr(entry, '=')) == NULL)
            continue;
        nlen = (size_t)(eq - entry);
        for (i = 0; i < GM_F_COUNT && !known; i++) {
            if (i == GM_F_LIMIT_N || strlen(field_names[i]) != nlen ||
                memcmp(field_names[i], entry, nlen) != 0)
                continue;
            known = true;
            if (c->val[i] == NULL)
                c->val[i] = eq + 1;
        }
        if (known)
            continue;
        if (nlen >= sizeof "GPUMEM_LIMIT_" - 1 &&
            memcmp(entry, "GPUMEM_LIMIT_", sizeof "GPUMEM_LIMIT_" - 1) == 0)
            collect_dev(c, entry, nlen, eq + 1);
        else
            warn_unknown(c, entry, nlen);
    }
}

static void apply_devs(struct load *c)
{
    char name[32];
    unsigned dev;

    for (dev = 0; dev < GM_MAX_DEVICES; dev++) {
        if (c->dev_val[dev] == NULL)
            continue;
        snprintf(name, sizeof name, "GPUMEM_LIMIT_%u", dev);
        if (parse_limit(c, GM_F_LIMIT_N, name, c->dev_val[dev],
                        &c->p->dev_limit[dev])) {
            c->p->dev_limit_set[dev] = true;
            c->p->src[GM_F_LIMIT_N] = GM_SRC_ENV;
        }
    }
}

/* ---- cross-variable checks --------------------------------------------- */

static bool any_limit(const struct gm_policy *p)
{
    unsigned i;

    if (p->limit.kind != GM_LIMIT_NONE)
        return true;
    for (i = 0; i < GM_MAX_DEVICES; i++)
        if (p->dev_limit_set[i] && p->dev_limit[i].kind != GM_LIMIT_NONE)
            return true;
    return false;
}

/* A cross-check refused field f: back to its default (as set by
 * gm_policy_defaults), marked refused. */
static void fall_back(struct load *c, enum gm_field f)
{
    struct gm_policy *p = c->p;

    c->bad[f] = true;
    if (f == GM_F_MODE)
        p->mode = GM_MODE_GROW;
    else if (f == GM_F_STATIC_SIZE)
        memset(&p->static_size, 0, sizeof p->static_size);
    else if (f == GM_F_GROUP)
        memset(p->group, 0, sizeof p->group);
    p->src[f] = GM_SRC_DEFAULT;
}

static void check_static_mode(struct load *c)
{
    struct gm_policy *p = c->p;

    if (p->mode != GM_MODE_STATIC || any_limit(p))
        return;
    if (!c->bad[GM_F_LIMIT] && !c->bad[GM_F_LIMIT_N])
        bad(c, GM_F_MODE, field_names[GM_F_MODE], c->val[GM_F_MODE],
            "needs a limit, but neither GPUMEM_LIMIT nor any "
            "GPUMEM_LIMIT_<N> sets one",
            "set GPUMEM_LIMIT (or GPUMEM_LIMIT_<N>), or use grow or staged");
    fall_back(c, GM_F_MODE);
}

/* Static size in bytes against one absolute limit. */
static bool static_fits(struct load *c, const char *lname, const char *lval,
                        const struct gm_limit *l)
{
    struct gm_policy *p = c->p;
    char what[3 * SHOW_MAX + 128], a[24], b[24], lv[SHOW_MAX + 4];

    if (l->kind != GM_LIMIT_BYTES || p->static_size.bytes <= l->bytes)
        return true;
    gm_format_size(p->static_size.bytes, a, sizeof a);
    gm_format_size(l->bytes, b, sizeof b);
    show(lval, lv, sizeof lv);
    snprintf(what, sizeof what, "(%s) is above %s='%s' (%s)", a, lname, lv,
             b);
    bad(c, GM_F_STATIC_SIZE, field_names[GM_F_STATIC_SIZE],
        c->val[GM_F_STATIC_SIZE], what,
        "use a size up to the limit, or NN% of the limit");
    return false;
}

static void check_static_size(struct load *c)
{
    struct gm_policy *p = c->p;
    char name[32];
    unsigned i;

    if (p->static_size.kind != GM_LIMIT_BYTES)
        return;
    if (!static_fits(c, field_names[GM_F_LIMIT], c->val[GM_F_LIMIT],
                     &p->limit)) {
        fall_back(c, GM_F_STATIC_SIZE);
        return;
    }
    for (i = 0; i < GM_MAX_DEVICES; i++) {
        if (!p->dev_limit_set[i])
            continue;
        snprintf(name, sizeof name, "GPUMEM_LIMIT_%u", i);
        if (!static_fits(c, name, c->dev_val[i], &p->dev_limit[i])) {
            fall_back(c, GM_F_STATIC_SIZE);
            return;
        }
    }
}

static void check_group(struct load *c)
{
    struct gm_policy *p = c->p;

    if (p->group[0] != '\0' && p->group_limit.kind == GM_LIMIT_NONE) {
        if (!c->bad[GM_F_GROUP_LIMIT])
            bad(c, GM_F_GROUP, field_names[GM_F_GROUP], c->val[GM_F_GROUP],
                "has no group limit",
                "set GPUMEM_GROUP_LIMIT to the group's shared limit (forms "
                "as GPUMEM_LIMIT), or unset GPUMEM_GROUP");
        fall_back(c, GM_F_GROUP);
    }
    if (p->group[0] == '\0' && p->src[GM_F_GROUP_LIMIT] == GM_SRC_ENV &&
        !c->bad[GM_F_GROUP])
        msg(c, false, "gpumem: GPUMEM_GROUP_LIMIT is set but GPUMEM_GROUP "
            "is not; the group limit is ignored");
}

/* The exit report is made from the telemetry segment. */
static void check_telemetry(struct load *c)
{
    struct gm_policy *p = c->p;

    if (p->telemetry || p->report == GM_REPORT_NONE)
        return;
    bad(c, GM_F_REPORT, field_names[GM_F_REPORT], c->val[GM_F_REPORT],
        "needs telemetry, but GPUMEM_TELEMETRY=0 turns it off",
        "use GPUMEM_TELEMETRY=1, or unset GPUMEM_REPORT");
    c->bad[GM_F_REPORT] = true;
    p->report = GM_REPORT_NONE;
    p->src[GM_F_REPORT] = GM_SRC_DEFAULT;
}

/* Variables that only matter in one mode: a warning, not an error. */
static void check_mode_only(struct load *c)
{
    static const struct { enum gm_field f; enum gm_mode m; } only[] = {
        { GM_F_STATIC_SIZE, GM_MODE_STATIC },
        { GM_F_WARMUP, GM_MODE_STAGED },
        { GM_F_HEADROOM, GM_MODE_STAGED },
    };
    size_t i;

    if (c->bad[GM_F_MODE])
        return;
    for (i = 0; i < sizeof only / sizeof only[0]; i++)
        if (c->p->src[only[i].f] == GM_SRC_ENV && c->p->mode != only[i].m)
            msg(c, false, "gpumem: %s is set but GPUMEM_MODE is %s, not %s; "
                "it has no effect", field_names[only[i].f],
                gm_mode_name(c->p->mode), gm_mode_name(only[i].m));
}

/* ---- public: loading --------------------------------------------------- */

void gm_policy_defaults(struct gm_policy *p)
{
    memset(p, 0, sizeof *p);
    p->limit.kind = GM_LIMIT_NONE;
    p->mode = GM_MODE_GROW;
    p->static_size.kind = GM_LIMIT_NONE;
    p->warmup_ns = 60 * NS_PER_S;
    p->headroom = 0.10;
    p->on_oom = GM_OOM_FAIL;
    p->oom_wait_ns = 60 * NS_PER_S;
    p->group_limit.kind = GM_LIMIT_NONE;
    p->priority = 1.0;
    p->report = GM_REPORT_NONE;
    p->telemetry = true;
    p->ring_events = 65536;
    memcpy(p->shm_prefix, "gpumem", sizeof "gpumem");
    p->log_level = GM_LOG_WARN;
    memcpy(p->cuda_library, "libcuda.so.1", sizeof "libcuda.so.1");
    p->on_bad_config = GM_BAD_EXIT;
}

int gm_policy_load(struct gm_policy *p, char *const *envp, struct gm_diag *d)
{
    struct load c;
    size_t i;

    memset(&c, 0, sizeof c);
    c.p = p;
    c.d = d;
    c.envp = envp;
    gm_policy_defaults(p);
    diag_reset(d);
    collect(&c);
    for (i = 0; i < TABLE_LEN; i++) {
        enum gm_field f = table[i].f;
        if (c.val[f] != NULL &&
            table[i].apply(&c, f, field_names[f], c.val[f]))
            p->src[f] = GM_SRC_ENV;
        if (f == GM_F_LIMIT)
            apply_devs(&c);
    }
    check_static_mode(&c);
    check_static_size(&c);
    check_group(&c);
    check_telemetry(&c);
    check_mode_only(&c);
    return d->errors > 0 ? -1 : 0;
}

/* ---- public: resolution ------------------------------------------------ */

/* Parts per 1e9; the parsed decimals are recovered exactly. */
static uint64_t ppb(double fraction)
{
    if (!(fraction > 0.0))
        return 0;
    if (fraction >= 1.0)
        return 1000000000ull;
    return (uint64_t)(fraction * 1e9 + 0.5);
}

uint64_t gm_limit_resolve(const struct gm_limit *l, uint64_t base)
{
    __extension__ typedef unsigned __int128 u128;
    u128 v;

    switch (l->kind) {
    case GM_LIMIT_BYTES:
        return l->bytes;
    case GM_LIMIT_PERCENT:
        v = (u128)base * ppb(l->fraction) / 1000000000u;
        break;
    case GM_LIMIT_SHARE:
        v = (u128)base * ppb(l->fraction) /
            ((u128)1000000000u * (l->ranks ? l->ranks : 1));
        break;
    default:
        return 0;
    }
    return v == 0 ? 1 : (uint64_t)v;
}

uint64_t gm_policy_limit_for(const struct gm_policy *p, unsigned dev,
                             uint64_t physical)
{
    if (dev < GM_MAX_DEVICES && p->dev_limit_set[dev])
        return gm_limit_resolve(&p->dev_limit[dev], physical);
    return gm_limit_resolve(&p->limit, physical);
}

/* ---- public: names ----------------------------------------------------- */

const char *gm_mode_name(enum gm_mode m)
{
    switch (m) {
    case GM_MODE_GROW: return "grow";
    case GM_MODE_STATIC: return "static";
    case GM_MODE_STAGED: return "staged";
    }
    return "?";
}

const char *gm_on_oom_name(enum gm_on_oom o)
{
    switch (o) {
    case GM_OOM_FAIL: return "fail";
    case GM_OOM_WAIT: return "wait";
    case GM_OOM_SPILL: return "spill";
    case GM_OOM_WARN: return "warn";
    }
    return "?";
}

const char *gm_report_name(enum gm_report r)
{
    switch (r) {
    case GM_REPORT_NONE: return "off";
    case GM_REPORT_STDERR: return "stderr";
    case GM_REPORT_JSON: return "json";
    }
    return "?";
}

const char *gm_log_level_name(enum gm_log l)
{
    switch (l) {
    case GM_LOG_QUIET: return "quiet";
    case GM_LOG_ERROR: return "error";
    case GM_LOG_WARN: return "warn";
    case GM_LOG_INFO: return "info";
    case GM_LOG_DEBUG: return "debug";
    }
    return "?";
}

const char *const *gm_policy_var_names(size_t *n)
{
    if (n != NULL)
        *n = GM_F_COUNT;
    return field_names;
}

/* ---- public: printing -------------------------------------------------- */

/* snprintf-like accumulating writer: len counts what was needed. */
struct out {
    char *buf;
    size_t cap;
    size_t len;
    size_t mark;    /* start of the current value (text form) */
    bool first;     /* no JSON member written yet */
};

static void putf(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void putf(struct out *o, const char *fmt, ...)
{
    char *dst = o->len < o->cap ? o->buf + o->len : NULL;
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

static void put_jstr(struct out *o, const char *s)
{
    const char *run = s;

    putf(o, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch != '"' && ch != '\\' && ch >= 0x20)
            continue;
        putf(o, "%.*s", (int)(s - run), run);
        if (ch == '"' || ch == '\\')
            putf(o, "\\%c", ch);
        else
            putf(o, "\\u%04x", ch);
        run = s + 1;
    }
    putf(o, "%s\"", run);
}

/* One variable: text line "NAME  value  source" or a JSON member. A NULL
 * text is an unset value (JSON null). `extra` holds fixed JSON members. */
static void item(struct out *o, bool json, const char *name,
                 enum gm_source src, const char *text, const char *extra)
{
    const char *s = src == GM_SRC_ENV ? "env" : "default";

    if (json) {
        putf(o, "%s\n  \"%s\": {\"value\": ", o->first ? "{" : ",", name);
        o->first = false;
        if (text == NULL)
            putf(o, "null");
        else
            put_jstr(o, text);
        putf(o, "%s%s, \"source\": \"%s\"}", extra && *extra ? ", " : "",
             extra ? extra : "", s);
        return;
    }
    putf(o, "%-22s ", name);
    o->mark = o->len;
    putf(o, "%s", text ? text : "(unset)");
    putf(o, "%*s %s\n",
         o->len - o->mark < VALUE_COL ? (int)(VALUE_COL - (o->len - o->mark))
                                      : 0, "", s);
}

static void fmt_pct(double fraction, char *buf, size_t cap)
{
    size_t n = gm_format_decimal(fraction * 100.0, 7, buf, cap);

    if (n + 1 < cap)
        memcpy(buf + n, "%", 2);
}

/* Text and JSON members of a limit. `of` names the base of a percent. */
static void limit_strs(const struct gm_limit *l, const char *of, char *t,
                       size_t tcap, char *x, size_t xcap)
{
    char a[32], b[32];

    switch (l->kind) {
    case GM_LIMIT_BYTES:
        gm_format_size(l->bytes, a, sizeof a);
        snprintf(t, tcap, "%s (%llu B)", a, (unsigned long long)l->bytes);
        snprintf(x, xcap, "\"kind\": \"bytes\", \"bytes\": %llu",
                 (unsigned long long)l->bytes);
        return;
    case GM_LIMIT_PERCENT:
        fmt_pct(l->fraction, a, sizeof a);
        gm_format_decimal(l->fraction, 9, b, sizeof b);
        snprintf(t, tcap, "%s of %s", a, of);
        snprintf(x, xcap, "\"kind\": \"percent\", \"fraction\": %s", b);
        return;
    case GM_LIMIT_SHARE:
        gm_format_decimal(l->fraction, 9, b, sizeof b);
        snprintf(t, tcap, "share:%s (physical / %u local ranks x %s)", b,
                 l->ranks, b);
        snprintf(x, xcap,
                 "\"kind\": \"share\", \"fraction\": %s, \"ranks\": %u", b,
                 l->ranks);
        return;
    default:
        snprintf(t, tcap, "none");
        snprintf(x, xcap, "\"kind\": \"none\"");
        return;
    }
}

static void fmt_limits(struct out *o, bool json, const struct gm_policy *p)
{
    char t[128], x[128], name[32];
    unsigned i;
    bool any = false;

    limit_strs(&p->limit, "physical memory", t, sizeof t, x, sizeof x);
    item(o, json, field_names[GM_F_LIMIT], p->src[GM_F_LIMIT], t, x);
    for (i = 0; i < GM_MAX_DEVICES; i++) {
        if (!p->dev_limit_set[i])
            continue;
        any = true;
        snprintf(name, sizeof name, "GPUMEM_LIMIT_%u", i);
        limit_strs(&p->dev_limit[i], "physical memory", t, sizeof t, x,
                   sizeof x);
        item(o, json, name, GM_SRC_ENV, t, x);
    }
    if (!any && !json)
        item(o, json, field_names[GM_F_LIMIT_N], GM_SRC_DEFAULT, NULL, NULL);
}

static void fmt_modes(struct out *o, bool json, const struct gm_policy *p)
{
    char t[128], x[128], d[32];

    item(o, json, field_names[GM_F_MODE], p->src[GM_F_MODE],
         gm_mode_name(p->mode), NULL);
    if (p->static_size.kind == GM_LIMIT_NONE) {
        snprintf(t, sizeof t, "the limit");
        snprintf(x, sizeof x, "\"kind\": \"limit\"");
    } else {
        limit_strs(&p->static_size, "the limit", t, sizeof t, x, sizeof x);
    }
    item(o, json, field_names[GM_F_STATIC_SIZE], p->src[GM_F_STATIC_SIZE], t,
         x);
    gm_format_duration(p->warmup_ns, t, sizeof t);
    snprintf(x, sizeof x, "\"ns\": %llu", (unsigned long long)p->warmup_ns);
    item(o, json, field_names[GM_F_WARMUP], p->src[GM_F_WARMUP], t, x);
    fmt_pct(p->headroom, t, sizeof t);
    gm_format_decimal(p->headroom, 9, d, sizeof d);
    snprintf(x, sizeof x, "\"fraction\": %s", d);
    item(o, json, field_names[GM_F_HEADROOM], p->src[GM_F_HEADROOM], t, x);
    x[0] = '\0';
    if (p->on_oom == GM_OOM_WAIT) {
        gm_format_duration(p->oom_wait_ns, d, sizeof d);
        snprintf(t, sizeof t, "wait:%s", d);
        snprintf(x, sizeof x, "\"wait_ns\": %llu",
                 (unsigned long long)p->oom_wait_ns);
    } else {
        snprintf(t, sizeof t, "%s", gm_on_oom_name(p->on_oom));
    }
    item(o, json, field_names[GM_F_ON_OOM], p->src[GM_F_ON_OOM], t, x);
}

static void fmt_group(struct out *o, bool json, const struct gm_policy *p)
{
    char t[128], x[128], w[32];
    const char *word = p->priority == 1.5   ? "high "
                       : p->priority == 1.0 ? "normal "
                       : p->priority == 0.7 ? "low "
                                            : "";

    item(o, json, field_names[GM_F_GROUP], p->src[GM_F_GROUP],
         p->group[0] ? p->group : NULL, NULL);
    limit_strs(&p->group_limit, "physical memory", t, sizeof t, x, sizeof x);
    item(o, json, field_names[GM_F_GROUP_LIMIT], p->src[GM_F_GROUP_LIMIT], t,
         x);
    gm_format_decimal(p->priority, 3, w, sizeof w);
    if (word[0])
        snprintf(t, sizeof t, "%s(weight %s)", word, w);
    else
        snprintf(t, sizeof t, "weight %s", w);
    snprintf(x, sizeof x, "\"weight\": %s", w);
    item(o, json, field_names[GM_F_PRIORITY], p->src[GM_F_PRIORITY], t, x);
}

static void fmt_output(struct out *o, bool json, const struct gm_policy *p)
{
    char t[GM_PATH_MAX + 8], x[64];

    if (p->report == GM_REPORT_JSON)
        snprintf(t, sizeof t, "json:%s", p->report_path);
    else
        snprintf(t, sizeof t, "%s", gm_report_name(p->report));
    snprintf(x, sizeof x, "\"target\": \"%s\"", gm_report_name(p->report));
    item(o, json, field_names[GM_F_REPORT], p->src[GM_F_REPORT], t, x);
    snprintf(x, sizeof x, "\"enabled\": %s", p->keep ? "true" : "false");
    item(o, json, field_names[GM_F_KEEP], p->src[GM_F_KEEP],
         p->keep ? "1" : "0", x);
    snprintf(x, sizeof x, "\"enabled\": %s",
             p->telemetry ? "true" : "false");
    item(o, json, field_names[GM_F_TELEMETRY], p->src[GM_F_TELEMETRY],
         p->telemetry ? "1" : "0", x);
    snprintf(t, sizeof t, "%u", (unsigned)p->ring_events);
    snprintf(x, sizeof x, "\"events\": %u", (unsigned)p->ring_events);
    item(o, json, field_names[GM_F_RING_EVENTS], p->src[GM_F_RING_EVENTS], t,
         x);
    item(o, json, field_names[GM_F_SHM_PREFIX], p->src[GM_F_SHM_PREFIX],
         p->shm_prefix, NULL);
    item(o, json, field_names[GM_F_LOG_LEVEL], p->src[GM_F_LOG_LEVEL],
         gm_log_level_name(p->log_level), NULL);
    item(o, json, field_names[GM_F_CUDA_LIBRARY], p->src[GM_F_CUDA_LIBRARY],
         p->cuda_library, NULL);
    item(o, json, field_names[GM_F_ON_BAD_CONFIG],
         p->src[GM_F_ON_BAD_CONFIG],
         p->on_bad_config == GM_BAD_WARN ? "warn" : "exit", NULL);
}

/* "valid" and "messages" members from the diagnostics. */
static void fmt_diag(struct out *o, const struct gm_diag *d)
{
    size_t i = 0, start;
    bool first = true;
    char line[LINE_MAX_];

    putf(o, ",\n  \"valid\": %s,\n  \"messages\": [", d->errors ? "false"
                                                                  : "true");
    while (i < d->len) {
        size_t n;
        start = i;
        while (i < d->len && d->text[i] != '\n')
            i++;
        n = i - start < sizeof line - 1 ? i - start : sizeof line - 1;
        memcpy(line, d->text + start, n);
        line[n] = '\0';
        i++;
        putf(o, "%s\n    ", first ? "" : ",");
        put_jstr(o, line);
        first = false;
    }
    putf(o, "%s]", first ? "" : "\n  ");
}

size_t gm_policy_format_ex(const struct gm_policy *p, const struct gm_diag *d,
                           bool json, char *buf, size_t cap)
{
    struct out o = { buf, buf ? cap : 0, 0, 0, true };

    if (o.cap > 0)
        buf[0] = '\0';
    fmt_limits(&o, json, p);
    fmt_modes(&o, json, p);
    fmt_group(&o, json, p);
    fmt_output(&o, json, p);
    if (json) {
        if (d != NULL)
            fmt_diag(&o, d);
        putf(&o, "\n}\n");
    }
    return o.len;
}

size_t gm_policy_format(const struct gm_policy *p, bool json, char *buf,
                        size_t cap)
{
    return gm_policy_format_ex(p, NULL, json, buf, cap);
}

/* Compact limit for the summary: "4.0GiB", "50%", "share:0.5/4", "none". */
static void limit_compact(const struct gm_limit *l, char *buf, size_t cap)
{
    char a[32], *sp;

    switch (l->kind) {
    case GM_LIMIT_BYTES:
        gm_format_size(l->bytes, a, sizeof a);
        sp = strchr(a, ' ');
        if (sp != NULL)
            memmove(sp, sp + 1, strlen(sp));
        snprintf(buf, cap, "%s", a);
        return;
    case GM_LIMIT_PERCENT:
        fmt_pct(l->fraction, buf, cap);
        return;
    case GM_LIMIT_SHARE:
        gm_format_decimal(l->fraction, 9, a, sizeof a);
        snprintf(buf, cap, "share:%s/%u", a, l->ranks);
        return;
    default:
        snprintf(buf, cap, "none");
        return;
    }
}

size_t gm_policy_summary(const struct gm_policy *p, char *buf, size_t cap)
{
    struct out o = { buf, buf ? cap : 0, 0, 0, true };
    char lim[48], d[32];
    unsigned i, devs = 0;

    if (o.cap > 0)
        buf[0] = '\0';
    limit_compact(&p->limit, lim, sizeof lim);
    putf(&o, "limit=%s mode=%s on_oom=%s", lim, gm_mode_name(p->mode),
         gm_on_oom_name(p->on_oom));
    if (p->on_oom == GM_OOM_WAIT) {
        gm_format_duration(p->oom_wait_ns, d, sizeof d);
        putf(&o, ":%s", d);
    }
    for (i = 0; i < GM_MAX_DEVICES; i++)
        devs += p->dev_limit_set[i];
    if (devs > 0)
        putf(&o, " dev_limits=%u", devs);
    if (p->group[0] != '\0') {
        limit_compact(&p->group_limit, lim, sizeof lim);
        putf(&o, " group=%s group_limit=%s", p->group, lim);
    }
    if (p->priority != 1.0) {
        gm_format_decimal(p->priority, 3, d, sizeof d);
        putf(&o, " priority=%s", d);
    }
    return o.len;
}
