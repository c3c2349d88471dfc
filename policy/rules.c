/*
 * policy/rules.c — the admin policy file's lines and what they impose:
 * NAME=VALUE lines with the environment's GPUMEM_* names set defaults
 * (source "admin"); GPUMEM_MAX_LIMIT, GPUMEM_FORCE_GROUP,
 * GPUMEM_ALLOW_ON_OOM, GPUMEM_FORCE_TELEMETRY and GPUMEM_ALLOW_DISABLE
 * set rules; after the environment is applied, gm_pol_admin_enforce holds
 * it to them (it may tighten, never loosen).
 *
 * Invariants: a bad line is an error naming PATH:LINE, what is wrong and
 * what is accepted, and makes the load fatal (p->admin_fatal); a name
 * given twice is an error; the environment's values outside a rule are
 * replaced by the rule's (a warning says which), never refused, so a job
 * runs under the admin's terms rather than not at all. No malloc; the
 * file's text is split in place.
 */
#include "policy/policy_int.h"

#include <stdio.h>
#include <string.h>

static const char *const rule_names[GM_R_COUNT] = {
    [GM_R_MAX_LIMIT] = "GPUMEM_MAX_LIMIT",
    [GM_R_FORCE_GROUP] = "GPUMEM_FORCE_GROUP",
    [GM_R_ALLOW_ON_OOM] = "GPUMEM_ALLOW_ON_OOM",
    [GM_R_FORCE_TELEMETRY] = "GPUMEM_FORCE_TELEMETRY",
    [GM_R_ALLOW_DISABLE] = "GPUMEM_ALLOW_DISABLE",
};

static const char F_LINE[] =
    "use NAME=VALUE lines (the GPUMEM_* variables of docs/env.md, or "
    "GPUMEM_MAX_LIMIT, GPUMEM_FORCE_GROUP, GPUMEM_ALLOW_ON_OOM, "
    "GPUMEM_FORCE_TELEMETRY, GPUMEM_ALLOW_DISABLE), blank lines and # "
    "comments";
static const char F_TEMPLATE[] =
    "use characters from A-Z a-z 0-9 _ . - and {VARIABLE} for an "
    "environment variable's value, e.g. slurm-{SLURM_JOB_ID}";
static const char F_ALLOW_OOM[] =
    "use a comma-separated list of fail, wait, spill, warn";
static const char F_BOOL[] = "use 0 or 1";

const char *gm_rule_name(enum gm_rule r)
{
    return (unsigned)r < GM_R_COUNT ? rule_names[r] : "?";
}

/* One line's name and value, and where it was. */
struct aline {
    const char *val;
    unsigned line;
};

struct afile {
    struct aline field[GM_F_COUNT];
    struct aline dev[GM_MAX_DEVICES];
    struct aline rule[GM_R_COUNT];
};

static void set_where(struct load *c, unsigned line)
{
    snprintf(c->where, sizeof c->where, "%s:%u: ", c->admin->path, line);
}

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r';
}

static char *trim(char *s)
{
    char *e;

    while (is_blank(*s))
        s++;
    e = s + strlen(s);
    while (e > s && is_blank(e[-1]))
        *--e = '\0';
    return s;
}

/* Record the value of `name` in its slot; an error when given twice. */
static void remember(struct load *c, struct aline *slot, const char *name,
                     const char *val, unsigned line)
{
    if (slot->val != NULL) {
        gm_pol_msg(c, true, "gpumem: %.*s is set twice (first at line %u); "
            "keep one line", NAME_SHOW_MAX, name, slot->line);
        return;
    }
    slot->val = val;
    slot->line = line;
}

/* GPUMEM_LIMIT_<N>: the device slot, or -1. */
static int dev_index(const char *name)
{
    static const char base[] = "GPUMEM_LIMIT_";
    const char *n = name + sizeof base - 1;
    size_t len;

    if (strncmp(name, base, sizeof base - 1) != 0)
        return -1;
    len = strlen(n);
    if (len == 0 || len > 2 || (len > 1 && n[0] == '0') ||
        strspn(n, "0123456789") != len)
        return -1;
    int dev = len == 1 ? n[0] - '0' : (n[0] - '0') * 10 + (n[1] - '0');
    return dev < GM_MAX_DEVICES ? dev : -1;
}

static void unknown_name(struct load *c, const char *name)
{
    const char *cand[GM_F_COUNT + GM_R_COUNT];
    char shown[NAME_SHOW_MAX + 4];
    size_t i, k = 0;

    for (i = 0; i < GM_F_COUNT; i++)
        if (i != GM_F_LIMIT_N)
            cand[k++] = gm_pol_field_names[i];
    for (i = 0; i < GM_R_COUNT; i++)
        cand[k++] = rule_names[i];
    const char *best = strlen(name) <= 64 ? gm_closest_name(name, cand, k, 3)
                                          : NULL;
    gm_pol_show(name, shown, sizeof shown);
    if (best != NULL)
        gm_pol_msg(c, true, "gpumem: unknown name %s (did you mean %s?); %s",
            shown, best, F_LINE);
    else
        gm_pol_msg(c, true, "gpumem: unknown name %s; %s", shown, F_LINE);
}

static void one_line(struct load *c, struct afile *f, char *text,
                     unsigned line)
{
    char *s = trim(text), *eq, *name, *val, *hash;
    size_t i;

    if (*s == '\0' || *s == '#')
        return;
    set_where(c, line);
    eq = strchr(s, '=');
    if (eq == NULL) {
        char shown[SHOW_MAX + 4];
        gm_pol_show(s, shown, sizeof shown);
        gm_pol_msg(c, true, "gpumem: '%s' is not a NAME=VALUE line; %s",
            shown, F_LINE);
        return;
    }
    *eq = '\0';
    name = trim(s);
    val = eq + 1;
    if (*name == '\0') {
        gm_pol_msg(c, true, "gpumem: a line has no name before '='; %s",
            F_LINE);
        return;
    }
    /* A '#' after a blank starts a trailing comment. */
    for (hash = val; (hash = strchr(hash, '#')) != NULL; hash++) {
        if (hash > val && is_blank(hash[-1])) {
            *hash = '\0';
            break;
        }
    }
    val = trim(val);
    for (i = 0; i < GM_F_COUNT; i++) {
        if (i != GM_F_LIMIT_N && strcmp(name, gm_pol_field_names[i]) == 0) {
            remember(c, &f->field[i], name, val, line);
            return;
        }
    }
    for (i = 0; i < GM_R_COUNT; i++) {
        if (strcmp(name, rule_names[i]) == 0) {
            remember(c, &f->rule[i], name, val, line);
            return;
        }
    }
    int dev = dev_index(name);
    if (dev >= 0) {
        remember(c, &f->dev[dev], name, val, line);
        return;
    }
    unknown_name(c, name);
}

/* ---- the rules ---------------------------------------------------------- */

static bool parse_bool(struct load *c, const char *name, const char *val,
                       bool *out)
{
    if (strcmp(val, "0") == 0 || strcmp(val, "1") == 0) {
        *out = val[0] == '1';
        return true;
    }
    char v[SHOW_MAX + 4];
    gm_pol_show(val, v, sizeof v);
    gm_pol_msg(c, true, "gpumem: %s='%s' is not 0 or 1; %s", name, v, F_BOOL);
    return false;
}

/* slurm-{SLURM_JOB_ID}: group characters, and {NAME} with NAME a
 * variable name. */
static bool check_template(struct load *c, const char *name, const char *val)
{
    char v[SHOW_MAX + 4], what[128];
    const char *s = val;

    what[0] = '\0';
    if (*s == '\0')
        snprintf(what, sizeof what, "is empty");
    else if (strlen(val) > GM_TEMPLATE_MAX)
        snprintf(what, sizeof what, "is longer than %u characters",
                 GM_TEMPLATE_MAX);
    while (what[0] == '\0' && *s != '\0') {
        unsigned char ch = (unsigned char)*s;
        if (ch == '{') {
            const char *e = strchr(s, '}');
            size_t n = e ? (size_t)(e - s - 1) : 0;
            if (e == NULL)
                snprintf(what, sizeof what, "has a '{' without '}'");
            else if (n == 0 || (s[1] >= '0' && s[1] <= '9') ||
                     strspn(s + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklm"
                            "nopqrstuvwxyz0123456789_") != n)
                snprintf(what, sizeof what, "has '{%.*s}', which is not a "
                         "variable name", (int)(n < 40 ? n : 40), s + 1);
            else
                s = e + 1;
            continue;
        }
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
            (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-') {
            s++;
            continue;
        }
        if (ch < 0x21 || ch >= 0x7f)
            snprintf(what, sizeof what, "contains a space, control or "
                     "non-ASCII character");
        else
            snprintf(what, sizeof what, "contains '%c', which is not allowed",
                     ch);
    }
    if (what[0] == '\0')
        return true;
    gm_pol_show(val, v, sizeof v);
    gm_pol_msg(c, true, "gpumem: %s='%s' %s; %s", name, v, what, F_TEMPLATE);
    return false;
}

static bool parse_allow_oom(struct load *c, const char *name, const char *val,
                            unsigned *mask)
{
    static const char *const words[] = { "fail", "wait", "spill", "warn" };
    char v[SHOW_MAX + 4], word[16];
    const char *s = val;
    unsigned m = 0;

    for (;;) {
        while (*s == ' ' || *s == '\t')
            s++;
        size_t n = strcspn(s, ", \t");
        unsigned i, hit = 4;
        if (n > 0 && n < sizeof word) {
            memcpy(word, s, n);
            word[n] = '\0';
            for (i = 0; i < 4; i++)
                if (gm_ascii_ieq(word, words[i]))
                    hit = i;
        }
        if (hit == 4) {
            gm_pol_show(val, v, sizeof v);
            gm_pol_msg(c, true, "gpumem: %s='%s' %s; %s", name, v,
                n == 0 ? "has an empty entry"
                       : "names something that is not an out-of-memory "
                         "policy", F_ALLOW_OOM);
            return false;
        }
        m |= 1u << hit;
        s += n;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '\0')
            break;
        if (*s != ',') {
            gm_pol_show(val, v, sizeof v);
            gm_pol_msg(c, true, "gpumem: %s='%s' is not a list; %s", name, v,
                F_ALLOW_OOM);
            return false;
        }
        s++;
    }
    *mask = m;
    return true;
}

static void apply_rule(struct load *c, enum gm_rule r, const char *val)
{
    struct gm_admin_rules *a = &c->p->admin;
    const char *name = rule_names[r];
    bool ok = false;

    switch (r) {
    case GM_R_MAX_LIMIT:
        ok = gm_pol_parse_limit(c, GM_F_LIMIT, name, val, &a->max_limit);
        break;
    case GM_R_FORCE_GROUP:
        ok = check_template(c, name, val);
        if (ok)
            snprintf(a->force_group, sizeof a->force_group, "%s", val);
        break;
    case GM_R_ALLOW_ON_OOM:
        ok = parse_allow_oom(c, name, val, &a->allow_on_oom);
        break;
    case GM_R_FORCE_TELEMETRY:
        ok = parse_bool(c, name, val, &a->force_telemetry);
        break;
    case GM_R_ALLOW_DISABLE:
        ok = parse_bool(c, name, val, &a->allow_disable);
        break;
    default:
        break;
    }
    a->set[r] = ok;
}

/* The file's own consistency: its defaults must obey its rules. */
static void check_file(struct load *c, const struct afile *f)
{
    struct gm_policy *p = c->p;
    const struct gm_admin_rules *a = &p->admin;

    if (a->set[GM_R_FORCE_GROUP] && p->group_limit.kind == GM_LIMIT_NONE) {
        set_where(c, f->rule[GM_R_FORCE_GROUP].line);
        gm_pol_msg(c, true, "gpumem: GPUMEM_FORCE_GROUP needs the group's "
            "limit; set GPUMEM_GROUP_LIMIT in the same file (forms as "
            "GPUMEM_LIMIT)");
    }
    if (a->set[GM_R_ALLOW_ON_OOM] &&
        (a->allow_on_oom & (1u << p->on_oom)) == 0) {
        set_where(c, f->rule[GM_R_ALLOW_ON_OOM].line);
        gm_pol_msg(c, true, "gpumem: GPUMEM_ALLOW_ON_OOM does not allow the "
            "default out-of-memory policy, %s; add it, or set GPUMEM_ON_OOM "
            "in the same file to one that is allowed",
            gm_on_oom_name(p->on_oom));
    }
    if (a->set[GM_R_FORCE_TELEMETRY] && a->force_telemetry &&
        !p->telemetry) {
        set_where(c, f->field[GM_F_TELEMETRY].line);
        gm_pol_msg(c, true, "gpumem: GPUMEM_TELEMETRY=0 contradicts "
            "GPUMEM_FORCE_TELEMETRY=1 (line %u); remove one",
            f->rule[GM_R_FORCE_TELEMETRY].line);
    }
    if (p->mode == GM_MODE_STATIC && !gm_policy_has_limit(p)) {
        set_where(c, f->field[GM_F_MODE].line);
        gm_pol_msg(c, true, "gpumem: GPUMEM_MODE=static needs a limit; set "
            "GPUMEM_LIMIT or GPUMEM_MAX_LIMIT in the same file, or use grow "
            "or staged");
    }
    if (p->group[0] != '\0' && p->group_limit.kind == GM_LIMIT_NONE) {
        set_where(c, f->field[GM_F_GROUP].line);
        gm_pol_msg(c, true, "gpumem: GPUMEM_GROUP needs GPUMEM_GROUP_LIMIT in "
            "the same file");
    }
}

void gm_pol_admin_apply(struct load *c)
{
    struct afile f;
    struct gm_policy *p = c->p;
    char *s = c->admin->text;
    unsigned line = 0;
    size_t i;

    memset(&f, 0, sizeof f);
    while (*s != '\0') {
        char *nl = strchr(s, '\n');
        if (nl != NULL)
            *nl = '\0';
        one_line(c, &f, s, ++line);
        if (nl == NULL)
            break;
        s = nl + 1;
    }
    for (i = 0; i < gm_pol_table_len; i++) {
        enum gm_field fl = gm_pol_table[i].f;
        const struct aline *l = &f.field[fl];
        if (l->val != NULL) {
            set_where(c, l->line);
            if (gm_pol_table[i].apply(c, fl, gm_pol_field_names[fl], l->val))
                p->src[fl] = GM_SRC_ADMIN;
        }
        if (fl != GM_F_LIMIT)
            continue;
        for (unsigned d = 0; d < GM_MAX_DEVICES; d++) {
            char name[32];
            if (f.dev[d].val == NULL)
                continue;
            set_where(c, f.dev[d].line);
            snprintf(name, sizeof name, "GPUMEM_LIMIT_%u", d);
            if (gm_pol_parse_limit(c, GM_F_LIMIT_N, name, f.dev[d].val,
                                   &p->dev_limit[d])) {
                p->dev_limit_set[d] = true;
                p->src[GM_F_LIMIT_N] = GM_SRC_ADMIN;
            }
        }
    }
    for (i = 0; i < GM_R_COUNT; i++) {
        if (f.rule[i].val == NULL)
            continue;
        set_where(c, f.rule[i].line);
        p->admin.line[i] = f.rule[i].line;
        apply_rule(c, (enum gm_rule)i, f.rule[i].val);
    }
    check_file(c, &f);
}

/* ---- holding the environment to the rules -------------------------------- */

enum cmp { WITHIN, ABOVE, UNKNOWN };

/* Is `l` above the ceiling `m`? Only comparable kinds are decided here;
 * the rest is held at resolution (gm_policy_limit_for). */
static enum cmp compare(const struct gm_limit *l, const struct gm_limit *m)
{
    if (l->kind == GM_LIMIT_NONE)
        return ABOVE;
    if (l->kind != m->kind)
        return UNKNOWN;
    switch (l->kind) {
    case GM_LIMIT_BYTES:
        return l->bytes > m->bytes ? ABOVE : WITHIN;
    case GM_LIMIT_PERCENT:
        return l->fraction > m->fraction ? ABOVE : WITHIN;
    case GM_LIMIT_SHARE:
        return l->fraction / (l->ranks ? l->ranks : 1) >
                       m->fraction / (m->ranks ? m->ranks : 1)
                   ? ABOVE
                   : WITHIN;
    default:
        return UNKNOWN;
    }
}

/* Copy at most cap-1 bytes of src (the caller checked or accepts the
 * length). */
static void copy_cut(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);

    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void note_asked(struct gm_policy *p, enum gm_field f, const char *v)
{
    p->clamped[f] = true;
    if (p->asked[f][0] == '\0')
        copy_cut(p->asked[f], sizeof p->asked[f], v);
}

/* Hold one limit to the ceiling; true when it was above. `asked` is the
 * environment's text, NULL when the value is not the environment's. */
static bool clamp_one(struct load *c, struct gm_limit *l, const char *name,
                      const char *asked)
{
    struct gm_policy *p = c->p;
    const struct gm_admin_rules *a = &p->admin;
    char m[128], v[SHOW_MAX + 4];

    if (compare(l, &a->max_limit) != ABOVE)
        return false;
    if (asked != NULL) {
        gm_pol_limit_text(&a->max_limit, m, sizeof m);
        gm_pol_show(asked, v, sizeof v);
        gm_pol_msg(c, false, "gpumem: %s='%s' is above the admin ceiling "
            "GPUMEM_MAX_LIMIT (%s:%u); the limit is %s", name, v,
            p->admin_path, a->line[GM_R_MAX_LIMIT], m);
    }
    *l = a->max_limit;
    return true;
}

static void clamp_limits(struct load *c)
{
    struct gm_policy *p = c->p;
    const char *base = p->hami ? "CUDA_DEVICE_MEMORY_LIMIT" : "GPUMEM_LIMIT";
    char name[48];
    unsigned d;

    if (p->admin.max_limit.kind == GM_LIMIT_NONE)
        return;
    const char *asked = c->val[GM_F_LIMIT] ? c->val[GM_F_LIMIT] : c->hami_val;
    if (p->src[GM_F_LIMIT] != GM_SRC_ENV)
        asked = NULL;
    if (clamp_one(c, &p->limit, base, asked)) {
        if (asked != NULL)
            note_asked(p, GM_F_LIMIT, asked);
        p->src[GM_F_LIMIT] = GM_SRC_ADMIN;
    }
    for (d = 0; d < GM_MAX_DEVICES; d++) {
        if (!p->dev_limit_set[d])
            continue;
        snprintf(name, sizeof name, "%s_%u", base, d);
        asked = c->dev_val[d] ? c->dev_val[d] : c->hami_dev[d];
        if (clamp_one(c, &p->dev_limit[d], name, asked) && asked != NULL)
            note_asked(p, GM_F_LIMIT_N, asked);
    }
}

/* The forced group: the template with each {VAR} replaced by the
 * environment's value. False (group left alone) when a variable is unset
 * or empty: the process is not part of such a job. */
static bool expand(struct load *c, const char *t, char *out, size_t cap,
                   char *missing, size_t mcap)
{
    size_t o = 0;

    while (*t != '\0' && o + 1 < cap) {
        if (*t != '{') {
            out[o++] = *t++;
            continue;
        }
        const char *e = strchr(t, '}');     /* checked by check_template */
        char var[GM_TEMPLATE_MAX + 1];
        size_t n = (size_t)(e - t - 1);
        memcpy(var, t + 1, n);
        var[n] = '\0';
        const char *v = gm_pol_env_find(c->envp, var);
        if (v == NULL || *v == '\0') {
            snprintf(missing, mcap, "%s", var);
            return false;
        }
        while (*v != '\0' && o + 1 < cap)
            out[o++] = *v++;
        t = e + 1;
    }
    out[o] = '\0';
    return true;
}

static void force_group(struct load *c)
{
    struct gm_policy *p = c->p;
    struct gm_admin_rules *a = &p->admin;
    char g[GM_TEMPLATE_MAX * 2 + 2], missing[GM_TEMPLATE_MAX + 1];

    if (!a->set[GM_R_FORCE_GROUP])
        return;
    if (!expand(c, a->force_group, g, sizeof g, missing, sizeof missing)) {
        snprintf(a->force_unset, sizeof a->force_unset, "%s", missing);
        return;
    }
    if (!gm_pol_check_name(c, GM_F_GROUP, "GPUMEM_FORCE_GROUP (expanded)", g,
                           GM_NAME_MAX,
                           "the admin's template must expand to a group name "
                           "(the job's variables are part of it)")) {
        memset(p->group, 0, sizeof p->group);
        p->src[GM_F_GROUP] = GM_SRC_DEFAULT;
        return;
    }
    if (p->src[GM_F_GROUP] == GM_SRC_ENV && strcmp(p->group, g) != 0) {
        char v[SHOW_MAX + 4];
        gm_pol_show(p->group, v, sizeof v);
        gm_pol_msg(c, false, "gpumem: GPUMEM_GROUP='%s' is replaced by the "
            "admin's group for this job, '%s' (GPUMEM_FORCE_GROUP, %s:%u)",
            v, g, p->admin_path, a->line[GM_R_FORCE_GROUP]);
        note_asked(p, GM_F_GROUP, p->group);
    }
    if (p->src[GM_F_GROUP_LIMIT] == GM_SRC_ENV) {
        char v[SHOW_MAX + 4];
        gm_pol_show(c->val[GM_F_GROUP_LIMIT], v, sizeof v);
        gm_pol_msg(c, false, "gpumem: GPUMEM_GROUP_LIMIT='%s' is ignored: the "
            "admin sets the limit of the job's group (%s)", v, p->admin_path);
        note_asked(p, GM_F_GROUP_LIMIT, c->val[GM_F_GROUP_LIMIT]);
    }
    copy_cut(p->group, sizeof p->group, g);     /* checked: <= 64 */
    p->group_limit = c->base_group_limit;
    p->src[GM_F_GROUP] = GM_SRC_ADMIN;
    p->src[GM_F_GROUP_LIMIT] = GM_SRC_ADMIN;
    copy_cut(a->forced, sizeof a->forced, g);
}

static void allowed_oom(struct load *c)
{
    struct gm_policy *p = c->p;
    const struct gm_admin_rules *a = &p->admin;
    char list[64] = "", v[SHOW_MAX + 4];
    unsigned i;

    if (!a->set[GM_R_ALLOW_ON_OOM] || (a->allow_on_oom & (1u << p->on_oom)))
        return;
    for (i = 0; i < 4; i++)
        if (a->allow_on_oom & (1u << i))
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                     list[0] ? "," : "", gm_on_oom_name((enum gm_on_oom)i));
    const char *asked = c->val[GM_F_ON_OOM] ? c->val[GM_F_ON_OOM] : "?";
    gm_pol_show(asked, v, sizeof v);
    gm_pol_msg(c, false, "gpumem: GPUMEM_ON_OOM='%s' is not allowed on this "
        "node (GPUMEM_ALLOW_ON_OOM=%s, %s:%u); using %s", v, list,
        p->admin_path, a->line[GM_R_ALLOW_ON_OOM],
        gm_on_oom_name(c->base_on_oom));
    note_asked(p, GM_F_ON_OOM, asked);
    p->on_oom = c->base_on_oom;
    p->oom_wait_ns = c->base_oom_wait_ns;
    p->src[GM_F_ON_OOM] = GM_SRC_ADMIN;
}

static void forced_telemetry(struct load *c)
{
    struct gm_policy *p = c->p;
    const struct gm_admin_rules *a = &p->admin;

    if (!a->set[GM_R_FORCE_TELEMETRY] || !a->force_telemetry || p->telemetry)
        return;
    gm_pol_msg(c, false, "gpumem: GPUMEM_TELEMETRY=0 is overridden: the admin "
        "keeps telemetry on (GPUMEM_FORCE_TELEMETRY=1, %s:%u)",
        p->admin_path, a->line[GM_R_FORCE_TELEMETRY]);
    note_asked(p, GM_F_TELEMETRY, "0");
    p->telemetry = true;
    p->src[GM_F_TELEMETRY] = GM_SRC_ADMIN;
}

void gm_pol_admin_enforce(struct load *c)
{
    if (c->p->admin_state != GM_ADMIN_READ)
        return;
    clamp_limits(c);
    force_group(c);
    allowed_oom(c);
    forced_telemetry(c);
}
