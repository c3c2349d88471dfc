/*
 * policy/load.c — loading an environment array into struct gm_policy: the
 * diagnostics (one precise message per bad value; "PATH:LINE: " inserted
 * while an admin-file line is applied), collecting GPUMEM_* entries (and
 * warning on unknown ones, with a suggestion), the stages of a load (admin
 * file, environment with HAMi-core's variables, admin rules), the
 * cross-variable checks, and limit resolution under the ceilings.
 *
 * Invariants: gm_policy_load() never calls getenv() and never allocates;
 * it is safe inside the preloaded library at first CUDA use. Every field
 * of the policy is valid after a load, even a failed one: a refused
 * variable keeps its default and its source stays GM_SRC_DEFAULT.
 * snprintf is used with integer and string conversions only.
 */
#include "policy/policy_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char F_DEVICE[] =
    "use GPUMEM_LIMIT_<N> with N a device ordinal from 0 to 63";

const char *const gm_pol_field_names[GM_F_COUNT] = {
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
    [GM_F_SHM_DIR] = "GPUMEM_SHM_DIR",
    [GM_F_LOG_LEVEL] = "GPUMEM_LOG_LEVEL",
    [GM_F_WARN_BEFORE] = "GPUMEM_WARN_BEFORE",
    [GM_F_CUDA_LIBRARY] = "GPUMEM_CUDA_LIBRARY",
    [GM_F_ON_BAD_CONFIG] = "GPUMEM_ON_BAD_CONFIG",
    [GM_F_RECORD] = "GPUMEM_RECORD",
    [GM_F_NVML_VIEW] = "GPUMEM_NVML_VIEW",
};

/* ---- diagnostics ------------------------------------------------------- */


static const char DIAG_MORE[] = "gpumem: (further messages dropped)\n";
static bool ends_with(const char *s, size_t len, const char *tail)
{
    size_t n = strlen(tail);
    return len >= n && memcmp(s + len - n, tail, n) == 0;
}

/* Append one line (ending in '\n'); keeps room for the "dropped" marker.
 * with_errors: printed with the errors (an error, or its consequence). */
static void diag_put(struct gm_diag *d, bool with_errors, const char *line)
{
    size_t n = strlen(line);

    if (d->len + n + sizeof DIAG_MORE <= sizeof d->text &&
        d->lines < GM_DIAG_LINES) {
        memcpy(d->text + d->len, line, n + 1);
        d->len += n;
        d->line_error[d->lines++] = with_errors;
        return;
    }
    if (!ends_with(d->text, d->len, DIAG_MORE) &&
        d->len + sizeof DIAG_MORE <= sizeof d->text) {
        memcpy(d->text + d->len, DIAG_MORE, sizeof DIAG_MORE);
        d->len += sizeof DIAG_MORE - 1;
    }
}

static void diag_add(struct gm_diag *d, bool error, const char *line)
{
    if (error)
        d->errors++;
    else
        d->warnings++;
    diag_put(d, error, line);
}

static void diag_reset(struct gm_diag *d)
{
    d->errors = 0;
    d->warnings = 0;
    d->len = 0;
    d->text[0] = '\0';
    d->lines = 0;
}

size_t gm_diag_errors_only(const struct gm_diag *d, char *out, size_t cap)
{
    size_t o = 0, at = 0;
    unsigned i = 0;

    if (cap == 0)
        return 0;
    while (at < d->len) {
        const char *nl = memchr(d->text + at, '\n', d->len - at);
        size_t n = nl ? (size_t)(nl - (d->text + at)) + 1 : d->len - at;
        /* Past the recorded lines: the "dropped" marker. */
        bool keep = i >= d->lines || d->line_error[i];
        if (keep && o + n < cap) {
            memcpy(out + o, d->text + at, n);
            o += n;
        }
        at += n;
        i++;
    }
    out[o] = '\0';
    return o;
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

void gm_pol_show(const char *s, char *out, size_t cap)
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

/* Format one message into line[LINE_MAX_], ending in '\n'. */
static void format_line(char *line, const char *fmt, va_list ap)
{
    end_line(line, LINE_MAX_, vsnprintf(line, LINE_MAX_ - 1, fmt, ap));
}

void gm_pol_msg(struct load *c, bool error, const char *fmt, ...)
{
    char line[LINE_MAX_];
    va_list ap;
    int n;

    va_start(ap, fmt);
    format_line(line, fmt, ap);
    va_end(ap);
    /* While an admin line is applied: "gpumem: PATH:LINE: ...". */
    if (c->where[0] != '\0' && strncmp(line, "gpumem: ", 8) == 0) {
        char at[LINE_MAX_ + sizeof c->where];
        n = snprintf(at, sizeof line - 1, "gpumem: %s%.*s", c->where,
                     (int)strlen(line + 8) - 1, line + 8);
        end_line(at, sizeof line, n);
        diag_add(c->d, error, at);
        if (error && c->admin_stage)
            c->p->admin_fatal = true;
        return;
    }
    diag_add(c->d, error, line);
}

/* A value for a message: the environment's, or the admin file's. */
static const char *val_or(const struct load *c, enum gm_field f)
{
    if (c->val[f] != NULL)
        return c->val[f];
    return c->p->src[f] == GM_SRC_ADMIN ? "(admin default)" : "(default)";
}

/* "gpumem: NAME='VALUE' WHAT; FORMS" and mark the field refused. */
void gm_pol_bad(struct load *c, enum gm_field f, const char *name,
                const char *val, const char *what, const char *forms)
{
    char v[SHOW_MAX + 4];

    gm_pol_show(val, v, sizeof v);
    gm_pol_msg(c, true, "gpumem: %.*s='%s' %s; %s", NAME_SHOW_MAX, name, v, what,
        forms);
    c->bad[f] = true;
}

/* Words for a parse error of a given kind, into buf. */
void gm_pol_perr_what(enum gm_perr e, enum kind k, const char *val,
                      size_t junk, char *buf, size_t cap)
{
    static const char *const noun[] = { "size", "duration", "number",
                                        "whole number", "percentage" };
    char a[SHOW_MAX + 4], b[SHOW_MAX + 4];

    switch (e) {
    case GM_PERR_TRAILING:
        gm_pol_show(val + junk, a, sizeof a);
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

void gm_pol_bad_parse(struct load *c, enum gm_field f, const char *name,
                      const char *val, enum gm_perr e, enum kind k,
                      size_t junk, const char *forms)
{
    char what[WHAT_MAX];

    gm_pol_perr_what(e, k, val, junk, what, sizeof what);
    gm_pol_bad(c, f, name, val, what, forms);
}

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
    gm_pol_bad(c, GM_F_LIMIT_N, name, val, what, F_DEVICE);
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
            cand[k++] = gm_pol_field_names[i] + PFX_LEN;
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
        gm_pol_msg(c, false, "gpumem: unknown variable %s; did you mean " PFX "%s?",
            name, best);
    else
        gm_pol_msg(c, false, "gpumem: unknown variable %s (ignored); 'gpumem help "
            "policy' lists the known variables", name);
}

/* Variables of gpumem that are not policy: the job identity the library
 * records (shim/telemetry/ident.h), read there, known here so they draw
 * no "unknown variable" warning. */
static const char *const ident_vars[] = {
    "GPUMEM_POD_NAMESPACE", "GPUMEM_POD_NAME", "GPUMEM_CONTAINER_NAME",
};

static bool ident_var(const char *entry, size_t nlen)
{
    for (size_t i = 0; i < sizeof ident_vars / sizeof ident_vars[0]; i++)
        if (strlen(ident_vars[i]) == nlen &&
            memcmp(ident_vars[i], entry, nlen) == 0)
            return true;
    return false;
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
            if (i == GM_F_LIMIT_N || strlen(gm_pol_field_names[i]) != nlen ||
                memcmp(gm_pol_field_names[i], entry, nlen) != 0)
                continue;
            known = true;
            if (c->val[i] == NULL)
                c->val[i] = eq + 1;
        }
        if (known || ident_var(entry, nlen))
            continue;
        for (i = 0; i < GM_R_COUNT && !known; i++) {
            const char *rn = gm_rule_name((enum gm_rule)i);
            if (strlen(rn) == nlen && memcmp(rn, entry, nlen) == 0)
                known = true;
        }
        if (known) {
            gm_pol_msg(c, false, "gpumem: %.*s is an admin setting, read "
                "only from the admin policy file %s; ignored in the "
                "environment", (int)nlen, entry, gm_admin_policy_path);
            continue;
        }
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
        if (gm_pol_parse_limit(c, GM_F_LIMIT_N, name, c->dev_val[dev],
                        &c->p->dev_limit[dev])) {
            c->p->dev_limit_set[dev] = true;
            c->dev_env[dev] = true;
            c->p->src[GM_F_LIMIT_N] = GM_SRC_ENV;
        }
        /* else: refused, !dev_env[dev] */
    }
}

/* ---- cross-variable checks --------------------------------------------- */

static bool any_limit(const struct gm_policy *p)
{
    return gm_policy_has_limit(p);
}

bool gm_policy_has_limit(const struct gm_policy *p)
{
    unsigned i;

    if (p->limit.kind != GM_LIMIT_NONE ||
        p->admin.max_limit.kind != GM_LIMIT_NONE || p->hami_cap != 0)
        return true;
    for (i = 0; i < GM_MAX_DEVICES; i++)
        if (p->hami_cap_dev[i] != 0)
            return true;
    for (i = 0; i < GM_MAX_DEVICES; i++)
        if (p->dev_limit_set[i] && p->dev_limit[i].kind != GM_LIMIT_NONE)
            return true;
    return false;
}

bool gm_policy_enforces(const struct gm_policy *p)
{
    return gm_policy_has_limit(p) || p->mode == GM_MODE_STATIC ||
           (p->group[0] != '\0' && p->group_limit.kind != GM_LIMIT_NONE);
}

/* A cross-check refused field f: back to what it was before the
 * environment (the admin default, or the built-in one), marked refused. */
static void fall_back(struct load *c, enum gm_field f)
{
    struct gm_policy *p = c->p;

    c->bad[f] = true;
    if (f == GM_F_MODE)
        p->mode = c->base_mode;
    else if (f == GM_F_STATIC_SIZE)
        p->static_size = c->base_static;
    else if (f == GM_F_GROUP)
        memcpy(p->group, c->base_group, sizeof p->group);
    p->src[f] = c->base_src[f];
}

static void check_static_mode(struct load *c)
{
    struct gm_policy *p = c->p;

    if (p->mode != GM_MODE_STATIC || any_limit(p))
        return;
    if (!c->bad[GM_F_LIMIT] && !c->bad[GM_F_LIMIT_N])
        gm_pol_bad(c, GM_F_MODE, gm_pol_field_names[GM_F_MODE], val_or(c, GM_F_MODE),
            "needs a limit, but neither GPUMEM_LIMIT nor any "
            "GPUMEM_LIMIT_<N> sets one",
            "set GPUMEM_LIMIT (or GPUMEM_LIMIT_<N>), or use grow or staged");
    fall_back(c, GM_F_MODE);
}

/* A limit in bytes known at load that holds the arena of some devices,
 * and whose it is; on equal sizes the earlier kind names it (a value an
 * admin ceiling replaced equals the ceiling). */
enum bound_kind { B_CEILING, B_GRANT, B_ADMIN, B_OWN };
struct bound {
    uint64_t bytes;                 /* 0: none */
    enum bound_kind kind;
    char what[2 * SHOW_MAX + GM_PATH_MAX + 96];
};

static void bound_take(struct bound *b, uint64_t bytes, enum bound_kind k,
                       const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void bound_take(struct bound *b, uint64_t bytes, enum bound_kind k,
                       const char *fmt, ...)
{
    va_list ap;

    if (bytes == 0 || (b->bytes != 0 && (bytes > b->bytes ||
                                         (bytes == b->bytes && k >= b->kind))))
        return;
    b->bytes = bytes;
    b->kind = k;
    va_start(ap, fmt);
    vsnprintf(b->what, sizeof b->what, fmt, ap);
    va_end(ap);
}

/* The limit the device (dev < 0: every device without a limit or grant
 * of its own) has from its variables, if in bytes. */
static void bound_limit(const struct load *c, int dev, struct bound *b)
{
    const struct gm_policy *p = c->p;
    bool own = dev >= 0 && p->dev_limit_set[dev];
    const struct gm_limit *l = own ? &p->dev_limit[dev] : &p->limit;
    char v[SHOW_MAX + 4], sz[32];

    if (l->kind != GM_LIMIT_BYTES)
        return;
    gm_format_size(l->bytes, sz, sizeof sz);
    if (own && c->dev_env[dev]) {
        gm_pol_show(c->dev_val[dev], v, sizeof v);
        bound_take(b, l->bytes, B_OWN, "GPUMEM_LIMIT_%d='%s' (%s)", dev, v, sz);
    } else if (own && c->dev_hami[dev]) {
        gm_pol_show(c->hami_dev[dev], v, sizeof v);
        bound_take(b, l->bytes, B_GRANT, "CUDA_DEVICE_MEMORY_LIMIT_%d='%s' "
                   "(%s), the scheduler's grant", dev, v, sz);
    } else if (own) {
        bound_take(b, l->bytes, B_ADMIN, "the admin default GPUMEM_LIMIT_%d "
                   "(%s, %s)", dev, sz, p->admin_path);
    } else if (p->src[GM_F_LIMIT] == GM_SRC_ENV && c->val[GM_F_LIMIT]) {
        gm_pol_show(c->val[GM_F_LIMIT], v, sizeof v);
        bound_take(b, l->bytes, B_OWN, "GPUMEM_LIMIT='%s' (%s)", v, sz);
    } else if (p->src[GM_F_LIMIT] == GM_SRC_ENV && c->hami_val) {
        gm_pol_show(c->hami_val, v, sizeof v);
        bound_take(b, l->bytes, B_GRANT, "CUDA_DEVICE_MEMORY_LIMIT='%s' (%s), "
                   "the scheduler's grant", v, sz);
    } else if (p->src[GM_F_LIMIT] == GM_SRC_ADMIN) {
        bound_take(b, l->bytes, B_ADMIN, "the admin default GPUMEM_LIMIT "
                   "(%s, %s)", sz, p->admin_path);
    }
}

/* The smallest limit in bytes known at load for the scope: its own
 * limit, HAMi-core's grant over it, the admin ceiling. */
static struct bound scope_bound(const struct load *c, int dev)
{
    const struct gm_policy *p = c->p;
    struct bound b = { 0, B_OWN, "" };
    bool dcap = dev >= 0 && p->hami_cap_dev[dev] != 0;
    uint64_t cap = dcap ? p->hami_cap_dev[dev] : p->hami_cap;
    char v[SHOW_MAX + 4], sz[32], n[16] = "";

    bound_limit(c, dev, &b);
    if (cap != 0) {
        gm_pol_show(dcap ? c->hami_dev[dev] : c->hami_val, v, sizeof v);
        gm_format_size(cap, sz, sizeof sz);
        if (dcap)
            snprintf(n, sizeof n, "_%d", dev);
        bound_take(&b, cap, B_GRANT, "CUDA_DEVICE_MEMORY_LIMIT%s='%s' (%s), "
                   "the scheduler's grant", n, v, sz);
    }
    if (p->admin.max_limit.kind == GM_LIMIT_BYTES) {
        gm_format_size(p->admin.max_limit.bytes, sz, sizeof sz);
        bound_take(&b, p->admin.max_limit.bytes, B_CEILING, "the admin "
                   "ceiling GPUMEM_MAX_LIMIT (%s, %s:%u)", sz, p->admin_path,
                   p->admin.line[GM_R_MAX_LIMIT]);
    }
    return b;
}

/* GPUMEM_STATIC_SIZE in bytes against the limit that holds the scope's
 * devices: -1 refused (above the job's own limit, both the job's), 1 held
 * (above a limit the job did not write: the arena takes the room that
 * limit leaves, said once), 0 within. */
static int static_fits(struct load *c, int dev)
{
    struct gm_policy *p = c->p;
    struct bound b = scope_bound(c, dev);
    char a[24], v[SHOW_MAX + 4], what[sizeof b.what + 64], on[32] = "";
    bool env = p->src[GM_F_STATIC_SIZE] == GM_SRC_ENV;

    if (b.bytes == 0 || p->static_size.bytes <= b.bytes)
        return 0;
    gm_format_size(p->static_size.bytes, a, sizeof a);
    if (b.kind == B_OWN && env) {
        snprintf(what, sizeof what, "(%s) is above %s", a, b.what);
        gm_pol_bad(c, GM_F_STATIC_SIZE, gm_pol_field_names[GM_F_STATIC_SIZE],
            c->val[GM_F_STATIC_SIZE], what,
            "use a size up to the limit, or NN% of the limit");
        return -1;
    }
    if (p->mode != GM_MODE_STATIC)
        return 0;
    if (dev >= 0)
        snprintf(on, sizeof on, " on device %d", dev);
    if (env) {
        gm_pol_show(c->val[GM_F_STATIC_SIZE], v, sizeof v);
        gm_pol_msg(c, false, "gpumem: GPUMEM_STATIC_SIZE='%s' (%s) is above "
            "%s; the arena%s takes the room that limit leaves", v, a, b.what,
            on);
    } else {
        gm_pol_msg(c, false, "gpumem: the admin default GPUMEM_STATIC_SIZE "
            "(%s) is above %s; the arena%s takes the room that limit leaves",
            a, b.what, on);
    }
    return 1;
}

static bool scope_of_its_own(const struct gm_policy *p, unsigned dev)
{
    return p->dev_limit_set[dev] || p->hami_cap_dev[dev] != 0;
}

static void check_static_size(struct load *c)
{
    struct gm_policy *p = c->p;
    uint64_t held = 0, own = 0;
    unsigned i;
    int r;

    if (p->static_size.kind != GM_LIMIT_BYTES)
        return;
    for (i = 0; i < GM_MAX_DEVICES; i++) {
        if (!scope_of_its_own(p, i))
            continue;
        own |= 1ull << i;
        if ((r = static_fits(c, (int)i)) < 0) {
            fall_back(c, GM_F_STATIC_SIZE);
            return;
        }
        if (r > 0)
            held |= 1ull << i;
    }
    if ((r = static_fits(c, -1)) < 0) {
        fall_back(c, GM_F_STATIC_SIZE);
        return;
    }
    if (r > 0)
        held |= ~own;
    p->static_said = held;
}

static void check_group(struct load *c)
{
    struct gm_policy *p = c->p;

    if (p->group[0] != '\0' && p->group_limit.kind == GM_LIMIT_NONE) {
        if (!c->bad[GM_F_GROUP_LIMIT])
            gm_pol_bad(c, GM_F_GROUP, gm_pol_field_names[GM_F_GROUP], val_or(c, GM_F_GROUP),
                "has no group limit",
                "set GPUMEM_GROUP_LIMIT to the group's shared limit (forms "
                "as GPUMEM_LIMIT), or unset GPUMEM_GROUP");
        fall_back(c, GM_F_GROUP);
    }
    if (p->group[0] == '\0' && p->src[GM_F_GROUP_LIMIT] == GM_SRC_ENV &&
        !c->bad[GM_F_GROUP])
        gm_pol_msg(c, false, "gpumem: GPUMEM_GROUP_LIMIT is set but GPUMEM_GROUP "
            "is not; the group limit is ignored");
}

/* The exit report is made from the telemetry segment. */
static void check_telemetry(struct load *c)
{
    struct gm_policy *p = c->p;

    if (p->telemetry || p->report == GM_REPORT_NONE)
        return;
    gm_pol_bad(c, GM_F_REPORT, gm_pol_field_names[GM_F_REPORT], val_or(c, GM_F_REPORT),
        "needs telemetry, but GPUMEM_TELEMETRY=0 turns it off",
        "use GPUMEM_TELEMETRY=1, or unset GPUMEM_REPORT");
    c->bad[GM_F_REPORT] = true;
    p->report = GM_REPORT_NONE;
    p->src[GM_F_REPORT] = GM_SRC_DEFAULT;
    p->report_path[0] = '\0';
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
            gm_pol_msg(c, false, "gpumem: %s is set but GPUMEM_MODE is %s, not %s; "
                "it has no effect", gm_pol_field_names[only[i].f],
                gm_mode_name(c->p->mode), gm_mode_name(only[i].m));
}

/* A size written without a unit is bytes. One below a mebibyte, where a
 * limit or an arena is meant, cannot hold even a CUDA context: almost
 * always a unit left out ("2" for 2G). A warning, not an error: the value
 * is valid and is what holds. */
#define BARE_BYTES_BELOW (1ull << 20)

static void warn_bare(struct load *c, const char *name, const char *val,
                      const struct gm_limit *l)
{
    char v[SHOW_MAX + 4];

    if (val == NULL || l->kind != GM_LIMIT_BYTES || l->bytes == 0 ||
        l->bytes >= BARE_BYTES_BELOW || val[strspn(val, "0123456789.")] != '\0')
        return;
    gm_pol_show(val, v, sizeof v);
    gm_pol_msg(c, false, "gpumem: %s='%s' is %llu bytes (a number without a "
        "unit is bytes), too little for any CUDA program; if more was "
        "meant, write a unit, e.g. %sG or %sM", name, v,
        (unsigned long long)l->bytes, v, v);
}

static void check_bare_bytes(struct load *c)
{
    const struct gm_policy *p = c->p;
    char name[32];

    if (p->src[GM_F_LIMIT] == GM_SRC_ENV && !c->bad[GM_F_LIMIT])
        warn_bare(c, "GPUMEM_LIMIT", c->val[GM_F_LIMIT], &p->limit);
    for (int d = 0; d < GM_MAX_DEVICES; d++)
        if (c->dev_env[d] && p->dev_limit_set[d]) {
            snprintf(name, sizeof name, "GPUMEM_LIMIT_%d", d);
            warn_bare(c, name, c->dev_val[d], &p->dev_limit[d]);
        }
    if (p->src[GM_F_GROUP_LIMIT] == GM_SRC_ENV && !c->bad[GM_F_GROUP_LIMIT])
        warn_bare(c, "GPUMEM_GROUP_LIMIT", c->val[GM_F_GROUP_LIMIT],
                  &p->group_limit);
    if (p->src[GM_F_STATIC_SIZE] == GM_SRC_ENV && !c->bad[GM_F_STATIC_SIZE])
        warn_bare(c, "GPUMEM_STATIC_SIZE", c->val[GM_F_STATIC_SIZE],
                  &p->static_size);
}

/* ---- what GPUMEM_ON_BAD_CONFIG=warn leaves in force -------------------- */

/* A line that goes with the errors, counted as neither. */
static void consequence(struct load *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void consequence(struct load *c, const char *fmt, ...)
{
    char line[LINE_MAX_];
    va_list ap;

    va_start(ap, fmt);
    format_line(line, fmt, ap);
    va_end(ap);
    diag_put(c->d, true, line);
}

/* The limit a scope's devices run with, in words: "no memory limit", or
 * "the limit is ..." with what gives it (a size known now, and a
 * percentage or share of the device's memory where one holds too). */
static void limit_words(const struct load *c, int dev, char *buf, size_t cap)
{
    const struct gm_policy *p = c->p;
    const struct gm_limit *l = dev >= 0 && p->dev_limit_set[dev]
                                   ? &p->dev_limit[dev] : &p->limit;
    const struct gm_limit *m = &p->admin.max_limit;
    struct bound b = scope_bound(c, dev);
    char t[128], frac[GM_PATH_MAX + 192] = "";

    if (l->kind == GM_LIMIT_PERCENT || l->kind == GM_LIMIT_SHARE) {
        gm_pol_limit_text(l, t, sizeof t);
        snprintf(frac, sizeof frac, "%s (%s)", t,
                 p->src[dev >= 0 && p->dev_limit_set[dev] ? GM_F_LIMIT_N
                                                         : GM_F_LIMIT] ==
                         GM_SRC_ADMIN ? "the admin default" : "the job's");
    } else if (m->kind == GM_LIMIT_PERCENT || m->kind == GM_LIMIT_SHARE) {
        gm_pol_limit_text(m, t, sizeof t);
        snprintf(frac, sizeof frac, "%s (the admin ceiling GPUMEM_MAX_LIMIT, "
                 "%s:%u)", t, p->admin_path, p->admin.line[GM_R_MAX_LIMIT]);
    }
    if (b.bytes == 0 && frac[0] == '\0')
        snprintf(buf, cap, "no memory limit");
    else if (frac[0] == '\0')
        snprintf(buf, cap, "the limit is %s", b.what);
    else if (b.bytes == 0)
        snprintf(buf, cap, "the limit is %s", frac);
    else
        snprintf(buf, cap, "the limit is %s, or %s where smaller", b.what,
                 frac);
}

/* One refused limit variable: what the process runs with instead. */
static void limit_fallback(struct load *c, const char *name, int dev)
{
    char w[2 * GM_PATH_MAX + 512], on[48] = "";
    bool alone = dev >= 0 && scope_of_its_own(c->p, (unsigned)dev);

    limit_words(c, alone ? dev : -1, w, sizeof w);
    if (dev >= 0)
        snprintf(on, sizeof on, "on device %d, ", dev);
    consequence(c, "gpumem: GPUMEM_ON_BAD_CONFIG=warn: this process runs "
        "without %s: %s%s", name, on, w);
}

/* Under GPUMEM_ON_BAD_CONFIG=warn, a refused limit never lifts a limit in
 * silence: each says what is in force instead. */
static void fallbacks(struct load *c)
{
    const struct gm_policy *p = c->p;
    char name[48];
    unsigned d;

    if (c->refused[GM_F_LIMIT])
        limit_fallback(c, "GPUMEM_LIMIT", -1);
    if (c->hami_refused)
        limit_fallback(c, "CUDA_DEVICE_MEMORY_LIMIT", -1);
    for (d = 0; d < GM_MAX_DEVICES; d++) {
        if (c->dev_val[d] != NULL && !c->dev_env[d]) {
            snprintf(name, sizeof name, "GPUMEM_LIMIT_%u", d);
            limit_fallback(c, name, (int)d);
        }
        if (c->hami_refused_dev[d]) {
            snprintf(name, sizeof name, "CUDA_DEVICE_MEMORY_LIMIT_%u", d);
            limit_fallback(c, name, (int)d);
        }
    }
    if (c->val[GM_F_GROUP] != NULL && c->bad[GM_F_GROUP]) {
        char v[SHOW_MAX + 4];
        gm_pol_show(p->group, v, sizeof v);
        if (p->group[0] != '\0')
            consequence(c, "gpumem: GPUMEM_ON_BAD_CONFIG=warn: this process "
                "runs without GPUMEM_GROUP: it joins the admin's group '%s'",
                v);
        else
            consequence(c, "gpumem: GPUMEM_ON_BAD_CONFIG=warn: this process "
                "runs without GPUMEM_GROUP: it joins no group, and only its "
                "own limit holds");
    }
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
    p->nvml_view = true;
    p->ring_events = 65536;
    memcpy(p->shm_prefix, "gpumem", sizeof "gpumem");
    memcpy(p->shm_dir, "/dev/shm", sizeof "/dev/shm");
    p->log_level = GM_LOG_WARN;
    p->warn_before_ns = 5 * 60 * NS_PER_S;
    memcpy(p->cuda_library, "libcuda.so.1", sizeof "libcuda.so.1");
    p->on_bad_config = GM_BAD_EXIT;
}

/* What the environment falls back to: the state after the admin file. */
static void save_base(struct load *c)
{
    const struct gm_policy *p = c->p;

    c->base_group_limit = p->group_limit;
    memcpy(c->base_group, p->group, sizeof c->base_group);
    c->base_mode = p->mode;
    c->base_static = p->static_size;
    c->base_on_oom = p->on_oom;
    c->base_oom_wait_ns = p->oom_wait_ns;
    c->base_telemetry = p->telemetry;
    memcpy(c->base_src, p->src, sizeof c->base_src);
}

void gm_pol_drop_admin_devs(struct load *c)
{
    struct gm_policy *p = c->p;

    if (p->src[GM_F_LIMIT_N] != GM_SRC_ADMIN)
        return;
    memset(p->dev_limit, 0, sizeof p->dev_limit);
    memset(p->dev_limit_set, 0, sizeof p->dev_limit_set);
    p->src[GM_F_LIMIT_N] = GM_SRC_DEFAULT;
}

static bool env_sets_limit(const struct load *c)
{
    unsigned i;

    if (c->val[GM_F_LIMIT] != NULL)
        return true;
    for (i = 0; i < GM_MAX_DEVICES; i++)
        if (c->dev_val[i] != NULL)
            return true;
    return false;
}

static void admin_stage(struct load *c, struct gm_admin_file *a)
{
    struct gm_policy *p = c->p;

    p->admin_state = a->state;
    snprintf(p->admin_path, sizeof p->admin_path, "%s", a->path);
    if (a->state == GM_ADMIN_REFUSED && a->no_fd) {
        gm_pol_msg(c, true, "gpumem: the admin policy file %s cannot be "
            "checked: %s; no CUDA program may run without its check (raise "
            "the process's open-file limit, ulimit -n, or close descriptors "
            "before the first CUDA call)", a->path, a->why);
        p->admin_fatal = true;
        return;
    }
    if (a->state == GM_ADMIN_REFUSED) {
        gm_pol_msg(c, true, "gpumem: the admin policy file %s is not "
            "trusted: %s; no CUDA program may run on this node until it is "
            "fixed (it must be a regular file owned by root and not "
            "writable by group or others, in directories of the same kind: "
            "chown root:root, chmod 0644)", a->path, a->why);
        p->admin_fatal = true;
        return;
    }
    if (a->state != GM_ADMIN_READ)
        return;
    c->admin = a;
    c->admin_stage = true;
    gm_pol_admin_apply(c);
    c->admin_stage = false;
    c->where[0] = '\0';
    memset(c->bad, 0, sizeof c->bad);
}

const char *gm_policy_field_name(enum gm_field f)
{
    return (unsigned)f < GM_F_COUNT ? gm_pol_field_names[f] : "?";
}

bool gm_policy_field_is_path(enum gm_field f)
{
    return f == GM_F_CUDA_LIBRARY || f == GM_F_REPORT || f == GM_F_RECORD ||
           f == GM_F_SHM_DIR || f == GM_F_SHM_PREFIX;
}

/* Secure execution: drop the environment's file and library names. A
 * report to standard error (0, 1, stderr) names no file and is kept. */
static void drop_paths(struct load *c)
{
    for (size_t i = 0; i < GM_F_COUNT; i++) {
        enum gm_field f = (enum gm_field)i;
        if (c->val[f] == NULL || !gm_policy_field_is_path(f))
            continue;
        if (f == GM_F_REPORT && strncmp(c->val[f], "json:", 5) != 0)
            continue;
        c->val[f] = NULL;
        c->p->secure_ignored[f] = true;
    }
}

int gm_policy_load_ex(struct gm_policy *p, char *const *envp,
                      struct gm_admin_file *a, struct gm_diag *d)
{
    return gm_policy_load_secure(p, envp, a, false, d);
}

int gm_policy_load_secure(struct gm_policy *p, char *const *envp,
                          struct gm_admin_file *a, bool secure,
                          struct gm_diag *d)
{
    struct load c;
    size_t i;

    memset(&c, 0, sizeof c);
    c.p = p;
    c.d = d;
    c.envp = envp;
    gm_policy_defaults(p);
    diag_reset(d);
    if (a != NULL)
        admin_stage(&c, a);
    save_base(&c);
    collect(&c);
    if (secure)
        drop_paths(&c);
    bool hami_as_limit = !env_sets_limit(&c);
    for (i = 0; i < gm_pol_table_len; i++) {
        enum gm_field f = gm_pol_table[i].f;
        if (c.val[f] != NULL) {
            if (gm_pol_table[i].apply(&c, f, gm_pol_field_names[f], c.val[f]))
                p->src[f] = GM_SRC_ENV;
            else
                c.refused[f] = true;
        }
        if (f == GM_F_LIMIT) {
            /* The job's own GPUMEM_LIMIT is its limit on every device:
             * the admin file's GPUMEM_LIMIT_<N> are defaults too. */
            if (p->src[GM_F_LIMIT] == GM_SRC_ENV)
                gm_pol_drop_admin_devs(&c);
            apply_devs(&c);
            gm_pol_hami_apply(&c, hami_as_limit);
        }
    }
    gm_pol_admin_enforce(&c);
    check_static_mode(&c);
    check_static_size(&c);
    check_group(&c);
    check_telemetry(&c);
    check_mode_only(&c);
    check_bare_bytes(&c);
    gm_pol_hami_disable(&c);
    if (d->errors > 0 && p->on_bad_config == GM_BAD_WARN && !p->admin_fatal)
        fallbacks(&c);
    return d->errors > 0 ? -1 : 0;
}

int gm_policy_load(struct gm_policy *p, char *const *envp, struct gm_diag *d)
{
    return gm_policy_load_ex(p, envp, NULL, d);
}

int gm_policy_load_node(struct gm_policy *p, char *const *envp,
                        struct gm_admin_file *a, struct gm_diag *d)
{
    return gm_policy_load_node_secure(p, envp, a, false, d);
}

int gm_policy_load_node_secure(struct gm_policy *p, char *const *envp,
                               struct gm_admin_file *a, bool secure,
                               struct gm_diag *d)
{
    gm_admin_read(gm_admin_policy_path, a);
    return gm_policy_load_secure(p, envp, a, secure, d);
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

uint64_t gm_policy_limit_for_ex(const struct gm_policy *p, unsigned dev,
                                uint64_t physical, bool *clamped)
{
    uint64_t want, max;

    if (dev < GM_MAX_DEVICES && p->dev_limit_set[dev])
        want = gm_limit_resolve(&p->dev_limit[dev], physical);
    else
        want = gm_limit_resolve(&p->limit, physical);
    max = gm_limit_resolve(&p->admin.max_limit, physical);
    uint64_t cap = dev < GM_MAX_DEVICES && p->hami_cap_dev[dev] != 0
                       ? p->hami_cap_dev[dev] : p->hami_cap;
    if (cap != 0 && (max == 0 || cap < max))
        max = cap;
    if (clamped != NULL)
        *clamped = max != 0 && (want == 0 || want > max);
    if (max != 0 && (want == 0 || want > max))
        return max;
    return want;
}

uint64_t gm_policy_limit_for(const struct gm_policy *p, unsigned dev,
                             uint64_t physical)
{
    return gm_policy_limit_for_ex(p, dev, physical, NULL);
}
