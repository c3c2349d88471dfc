/*
 * policy/format.c — names of the enums, and the effective policy printed
 * for people and programs (`gpumem policy`, text or JSON, with where each
 * value came from and the load's messages), and the one-line summary the
 * shim publishes in its segment.
 *
 * Invariant: output goes to the caller's buffer only, truncated but
 * always terminated; the return value is the length it needed.
 */
#include "policy/policy_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

const char *gm_source_name(enum gm_source s)
{
    switch (s) {
    case GM_SRC_DEFAULT: return "default";
    case GM_SRC_ENV: return "env";
    case GM_SRC_ADMIN: return "admin";
    }
    return "?";
}

const char *const *gm_policy_var_names(size_t *n)
{
    if (n != NULL)
        *n = GM_F_COUNT;
    return gm_pol_field_names;
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
    const char *s = gm_source_name(src);

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
    /* A value too long for its column: the source goes on the next line,
     * in its column, never run into the value. */
    if (o->len - o->mark >= VALUE_COL)
        putf(o, "\n%*s", 22 + 1 + VALUE_COL, "");
    else
        putf(o, "%*s", (int)(VALUE_COL - (o->len - o->mark)), "");
    putf(o, " %s\n", s);
}

/* A field's item; when a ceiling changed what the environment asked,
 * the text says so and the JSON carries "clamped" and "asked". */
static void fitem(struct out *o, bool json, const struct gm_policy *p,
                  enum gm_field f, const char *text, const char *extra)
{
    char t[GM_PATH_MAX + 160], x[256];

    if (!p->clamped[f]) {
        item(o, json, gm_pol_field_names[f], p->src[f], text, extra);
        return;
    }
    snprintf(t, sizeof t, "%s (asked %s)",
             text ? text : "(unset)", p->asked[f]);
    struct out a = { x, sizeof x, 0, 0, true };
    putf(&a, "%s%s\"clamped\": true, \"asked\": ", extra ? extra : "",
         extra && *extra ? ", " : "");
    put_jstr(&a, p->asked[f]);
    item(o, json, gm_pol_field_names[f], p->src[f], json ? text : t, x);
}

static void limit_compact(const struct gm_limit *l, char *buf, size_t cap);

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

void gm_pol_limit_text(const struct gm_limit *l, char *buf, size_t cap)
{
    char x[128];

    limit_strs(l, "physical memory", buf, cap, x, sizeof x);
}

/* A HAMi-core grant over a limit: its bytes (0: none) and its variable. */
struct grant {
    uint64_t bytes;
    char name[48];
};

/* What else holds a limit: its HAMi-core origin, a ceiling that can only
 * be applied once the device's size is known (the admin's, a grant). */
static void limit_notes(const struct gm_policy *p, const struct gm_limit *l,
                        const struct grant *g, char *t, size_t cap, char *x,
                        size_t xcap)
{
    const struct gm_limit *m = &p->admin.max_limit;
    char mt[128];

    if (p->hami && l->kind != GM_LIMIT_NONE) {
        snprintf(t + strlen(t), cap - strlen(t),
                 " (from CUDA_DEVICE_MEMORY_LIMIT)");
        snprintf(x + strlen(x), xcap - strlen(x), ", \"hami\": true");
    }
    if (m->kind != GM_LIMIT_NONE && l->kind != GM_LIMIT_NONE &&
        l->kind != m->kind) {
        gm_pol_limit_text(m, mt, sizeof mt);
        snprintf(t + strlen(t), cap - strlen(t), ", at most %s "
                 "(GPUMEM_MAX_LIMIT)", mt);
    }
    if (g->bytes != 0 && l->kind != GM_LIMIT_NONE &&
        l->kind != GM_LIMIT_BYTES) {
        gm_format_size(g->bytes, mt, sizeof mt);
        snprintf(t + strlen(t), cap - strlen(t), ", at most %s (%s)", mt,
                 g->name);
    }
}

/* The grant that holds device d (its own, else the one over all
 * devices; d = GM_MAX_DEVICES: the one over all devices). */
static struct grant grant_of(const struct gm_policy *p, unsigned d)
{
    struct grant g = { p->hami_cap, "CUDA_DEVICE_MEMORY_LIMIT" };

    if (d < GM_MAX_DEVICES && p->hami_cap_dev[d] != 0) {
        g.bytes = p->hami_cap_dev[d];
        snprintf(g.name, sizeof g.name, "CUDA_DEVICE_MEMORY_LIMIT_%u", d);
    }
    return g;
}

/* What the environment asked of a limit a grant holds down: the text an
 * admin ceiling kept (`kept`), else the limit as it was parsed. */
static void asked_text(const struct gm_limit *l, const char *kept, char *buf,
                       size_t cap)
{
    if (kept != NULL && kept[0] != '\0')
        snprintf(buf, cap, "%s", kept);
    else if (l->kind == GM_LIMIT_BYTES)
        gm_format_size(l->bytes, buf, cap);
    else
        limit_compact(l, buf, cap);
}

/* One limit row, as the environment (or the admin) gave it, or, when a
 * grant holds it down, the grant with what was asked: the effective
 * value, as for an admin ceiling (fitem). f: GM_F_LIMIT for the row of
 * every device (which fitem shows), else a device's row. */
static void limit_row(struct out *o, bool json, const struct gm_policy *p,
                      const char *name, enum gm_field f, enum gm_source src,
                      const struct gm_limit *l, const struct grant *g)
{
    char t[384], x[256], a[64], v[128];
    struct gm_limit held;

    if (!gm_pol_hami_held(l, g->bytes, &held)) {
        limit_strs(l, "physical memory", t, sizeof t, x, sizeof x);
        limit_notes(p, l, g, t, sizeof t, x, sizeof x);
        if (f == GM_F_LIMIT)
            fitem(o, json, p, f, t, x);
        else
            item(o, json, name, src, t, x);
        return;
    }
    asked_text(l, p->clamped[f] ? p->asked[f] : NULL, a, sizeof a);
    limit_strs(&held, "physical memory", v, sizeof v, x, sizeof x);
    snprintf(t, sizeof t, "%s (asked %s, the grant of %s)", v, a, g->name);
    struct out xo = { x, sizeof x, strlen(x), 0, true };
    putf(&xo, ", \"clamped\": true, \"asked\": ");
    put_jstr(&xo, a);
    putf(&xo, ", \"ceiling\": \"%s\"", g->name);
    item(o, json, name, src, json ? v : t, x);
}

/* A device row for device d when what holds there is not what the row
 * of every device shows: its own GPUMEM_LIMIT_<d>, or a grant of its own
 * that holds GPUMEM_LIMIT down otherwise than on the other devices. */
static bool dev_row(struct out *o, bool json, const struct gm_policy *p,
                    unsigned d)
{
    char name[32];
    struct grant g = grant_of(p, d), all = grant_of(p, GM_MAX_DEVICES);
    struct gm_limit here = p->limit, shown = p->limit;

    snprintf(name, sizeof name, "GPUMEM_LIMIT_%u", d);
    if (p->dev_limit_set[d]) {
        limit_row(o, json, p, name, GM_F_LIMIT_N, p->src[GM_F_LIMIT_N],
                  &p->dev_limit[d], &g);
        return true;
    }
    if (p->hami_cap_dev[d] == 0)
        return false;
    (void)gm_pol_hami_held(&p->limit, g.bytes, &here);
    (void)gm_pol_hami_held(&p->limit, all.bytes, &shown);
    if (here.kind == shown.kind && here.bytes == shown.bytes)
        return false;
    limit_row(o, json, p, name, GM_F_LIMIT_N, GM_SRC_ENV, &p->limit, &g);
    return true;
}

static void fmt_limits(struct out *o, bool json, const struct gm_policy *p)
{
    struct grant all = grant_of(p, GM_MAX_DEVICES);
    unsigned i;
    bool any = false;

    limit_row(o, json, p, gm_pol_field_names[GM_F_LIMIT], GM_F_LIMIT,
              p->src[GM_F_LIMIT], &p->limit, &all);
    for (i = 0; i < GM_MAX_DEVICES; i++)
        any |= dev_row(o, json, p, i);
    if (!any)
        item(o, json, gm_pol_field_names[GM_F_LIMIT_N], GM_SRC_DEFAULT, NULL, NULL);
}

static void fmt_modes(struct out *o, bool json, const struct gm_policy *p)
{
    char t[128], x[128], d[32];

    fitem(o, json, p, GM_F_MODE, gm_mode_name(p->mode), NULL);
    if (p->static_size.kind == GM_LIMIT_NONE) {
        snprintf(t, sizeof t, "the limit");
        snprintf(x, sizeof x, "\"kind\": \"limit\"");
    } else {
        limit_strs(&p->static_size, "the limit", t, sizeof t, x, sizeof x);
    }
    fitem(o, json, p, GM_F_STATIC_SIZE, t,
         x);
    gm_format_duration(p->warmup_ns, t, sizeof t);
    snprintf(x, sizeof x, "\"ns\": %llu", (unsigned long long)p->warmup_ns);
    fitem(o, json, p, GM_F_WARMUP, t, x);
    fmt_pct(p->headroom, t, sizeof t);
    gm_format_decimal(p->headroom, 9, d, sizeof d);
    snprintf(x, sizeof x, "\"fraction\": %s", d);
    fitem(o, json, p, GM_F_HEADROOM, t, x);
    x[0] = '\0';
    if (p->on_oom == GM_OOM_WAIT) {
        gm_format_duration(p->oom_wait_ns, d, sizeof d);
        snprintf(t, sizeof t, "wait:%s", d);
        snprintf(x, sizeof x, "\"wait_ns\": %llu",
                 (unsigned long long)p->oom_wait_ns);
    } else {
        snprintf(t, sizeof t, "%s", gm_on_oom_name(p->on_oom));
    }
    fitem(o, json, p, GM_F_ON_OOM, t, x);
}

static void fmt_group(struct out *o, bool json, const struct gm_policy *p)
{
    char t[128], x[128], w[32];
    const char *word = p->priority == 1.5   ? "high "
                       : p->priority == 1.0 ? "normal "
                       : p->priority == 0.7 ? "low "
                                            : "";

    fitem(o, json, p, GM_F_GROUP, p->group[0] ? p->group : NULL, NULL);
    limit_strs(&p->group_limit, "physical memory", t, sizeof t, x, sizeof x);
    fitem(o, json, p, GM_F_GROUP_LIMIT, t,
         x);
    gm_format_decimal(p->priority, 3, w, sizeof w);
    if (word[0])
        snprintf(t, sizeof t, "%s(weight %s)", word, w);
    else
        snprintf(t, sizeof t, "weight %s", w);
    snprintf(x, sizeof x, "\"weight\": %s", w);
    fitem(o, json, p, GM_F_PRIORITY, t, x);
}

static void fmt_output(struct out *o, bool json, const struct gm_policy *p)
{
    char t[GM_PATH_MAX + 8], x[64];

    if (p->report == GM_REPORT_JSON)
        snprintf(t, sizeof t, "json:%s", p->report_path);
    else
        snprintf(t, sizeof t, "%s", gm_report_name(p->report));
    snprintf(x, sizeof x, "\"target\": \"%s\"", gm_report_name(p->report));
    fitem(o, json, p, GM_F_REPORT, t, x);
    snprintf(x, sizeof x, "\"enabled\": %s", p->keep ? "true" : "false");
    fitem(o, json, p, GM_F_KEEP, p->keep ? "1" : "0", x);
    snprintf(x, sizeof x, "\"enabled\": %s",
             p->telemetry ? "true" : "false");
    fitem(o, json, p, GM_F_TELEMETRY, p->telemetry ? "1" : "0", x);
    snprintf(t, sizeof t, "%u", (unsigned)p->ring_events);
    snprintf(x, sizeof x, "\"events\": %u", (unsigned)p->ring_events);
    fitem(o, json, p, GM_F_RING_EVENTS, t,
         x);
    fitem(o, json, p, GM_F_SHM_PREFIX, p->shm_prefix, NULL);
    fitem(o, json, p, GM_F_SHM_DIR, p->shm_dir, NULL);
    fitem(o, json, p, GM_F_LOG_LEVEL, gm_log_level_name(p->log_level), NULL);
    if (p->warn_before_ns == 0)
        snprintf(t, sizeof t, "0 (off)");
    else
        gm_format_duration(p->warn_before_ns, t, sizeof t);
    snprintf(x, sizeof x, "\"ns\": %llu",
             (unsigned long long)p->warn_before_ns);
    fitem(o, json, p, GM_F_WARN_BEFORE, t, x);
    fitem(o, json, p, GM_F_CUDA_LIBRARY, p->cuda_library, NULL);
    fitem(o, json, p, GM_F_ON_BAD_CONFIG, p->on_bad_config == GM_BAD_WARN ? "warn" : "exit", NULL);
    fitem(o, json, p, GM_F_RECORD, p->record_dir[0] ? p->record_dir : "off",
          NULL);
    snprintf(x, sizeof x, "\"enabled\": %s", p->nvml_view ? "true" : "false");
    fitem(o, json, p, GM_F_NVML_VIEW, p->nvml_view ? "1" : "0", x);
}

/* The admin file's rules, and the HAMi-core variables seen. */
static void fmt_admin(struct out *o, bool json, const struct gm_policy *p)
{
    const struct gm_admin_rules *a = &p->admin;
    char t[GM_PATH_MAX + 64], x[GM_PATH_MAX + 64];
    unsigned i;

#define RSRC(r) (a->set[r] ? GM_SRC_ADMIN : GM_SRC_DEFAULT)
    limit_strs(&a->max_limit, "physical memory", t, sizeof t, x, sizeof x);
    item(o, json, gm_rule_name(GM_R_MAX_LIMIT), RSRC(GM_R_MAX_LIMIT), t, x);
    if (!a->set[GM_R_FORCE_GROUP])
        snprintf(t, sizeof t, "none");
    else if (a->forced[0] != '\0')
        snprintf(t, sizeof t, "%s = %s", a->force_group, a->forced);
    else if (a->force_unset[0] != '\0')
        snprintf(t, sizeof t, "%s (not applied: %s is unset)",
                 a->force_group, a->force_unset);
    else
        snprintf(t, sizeof t, "%s (not applied)", a->force_group);
    struct out xo = { x, sizeof x, 0, 0, true };
    putf(&xo, "\"group\": ");
    if (a->forced[0] != '\0')
        put_jstr(&xo, a->forced);
    else
        putf(&xo, "null");
    item(o, json, gm_rule_name(GM_R_FORCE_GROUP), RSRC(GM_R_FORCE_GROUP), t,
         x);
    t[0] = '\0';
    for (i = 0; i < 4; i++)
        if (!a->set[GM_R_ALLOW_ON_OOM] || (a->allow_on_oom & (1u << i)))
            snprintf(t + strlen(t), sizeof t - strlen(t), "%s%s",
                     t[0] ? "," : "", gm_on_oom_name((enum gm_on_oom)i));
    item(o, json, gm_rule_name(GM_R_ALLOW_ON_OOM), RSRC(GM_R_ALLOW_ON_OOM), t,
         NULL);
    item(o, json, gm_rule_name(GM_R_FORCE_TELEMETRY),
         RSRC(GM_R_FORCE_TELEMETRY), a->force_telemetry ? "1" : "0", NULL);
    item(o, json, gm_rule_name(GM_R_ALLOW_DISABLE), RSRC(GM_R_ALLOW_DISABLE),
         a->allow_disable ? "1" : "0", NULL);
#undef RSRC
    {
        static const char *const st[] = { "absent", "read", "refused" };
        const char *path = p->admin_path[0] ? p->admin_path
                                            : gm_admin_policy_path;
        snprintf(t, sizeof t, "%s (%s)", path,
                 p->admin_path[0] ? st[p->admin_state] : "not read");
        struct out ao = { x, sizeof x, 0, 0, true };
        putf(&ao, "\"state\": \"%s\"",
             p->admin_path[0] ? st[p->admin_state] : "not read");
        item(o, json, json ? "admin_file" : "admin file",
             p->admin_state == GM_ADMIN_READ
             ? GM_SRC_ADMIN : GM_SRC_DEFAULT, json ? path : t, x);
    }
    if (p->hami_capped) {
        char sz[32];
        if (p->hami_cap != 0) {
            gm_format_size(p->hami_cap, sz, sizeof sz);
            snprintf(t, sizeof t, "%s, a ceiling over GPUMEM_LIMIT", sz);
            snprintf(x, sizeof x, "\"bytes\": %llu",
                     (unsigned long long)p->hami_cap);
            item(o, json, "CUDA_DEVICE_MEMORY_LIMIT", GM_SRC_ENV, t, x);
        }
        for (i = 0; i < GM_MAX_DEVICES; i++) {
            char name[48];
            if (p->hami_cap_dev[i] == 0)
                continue;
            gm_format_size(p->hami_cap_dev[i], sz, sizeof sz);
            snprintf(name, sizeof name, "CUDA_DEVICE_MEMORY_LIMIT_%u", i);
            snprintf(t, sizeof t, "%s, a ceiling on device %u", sz, i);
            snprintf(x, sizeof x, "\"bytes\": %llu",
                     (unsigned long long)p->hami_cap_dev[i]);
            item(o, json, name, GM_SRC_ENV, t, x);
        }
    }
    if (p->hami_shared_cache)
        item(o, json, "CUDA_DEVICE_MEMORY_SHARED_CACHE", GM_SRC_ENV,
             "ignored (HAMi-core's own accounting file; gpumem keeps its "
             "figures in its segment)", NULL);
    if (p->disabled)
        item(o, json, "CUDA_DISABLE_CONTROL", GM_SRC_ENV,
             "true: nothing is limited (GPUMEM_ALLOW_DISABLE=1)", NULL);
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
    fmt_admin(&o, json, p);
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
