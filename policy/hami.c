/*
 * policy/hami.c — HAMi-core's variables read with HAMi-core's meaning, so
 * that HAMi's device plugin and scheduler can hand gpumem each
 * container's memory: CUDA_DEVICE_MEMORY_LIMIT (every device) and
 * CUDA_DEVICE_MEMORY_LIMIT_<N> (device N, over the former), in HAMi-core's
 * size form (1g, 1024m, 1048576k, 1073741824): the limits when the
 * environment sets no GPUMEM_LIMIT nor GPUMEM_LIMIT_<N>, else caps over
 * those (the scheduler's grant, which the job may tighten, not lift);
 * CUDA_DEVICE_MEMORY_SHARED_CACHE (HAMi-core's own accounting file)
 * noted and ignored; CUDA_DISABLE_CONTROL honoured only when the admin
 * file says GPUMEM_ALLOW_DISABLE=1.
 *
 * Invariants: a value HAMi-core would read as "no limit" (0) gives none
 * here too, with a warning; a value HAMi-core would half-read (trailing
 * text, octal or hex) is refused with a message instead of guessed; the
 * limits taken are the environment's (source "env", p->hami set) and
 * held to the admin ceiling like GPUMEM_LIMIT.
 */
#include "policy/policy_int.h"

#include <stdio.h>
#include <string.h>

#define HAMI_LIMIT "CUDA_DEVICE_MEMORY_LIMIT"
#define HAMI_CACHE "CUDA_DEVICE_MEMORY_SHARED_CACHE"
#define HAMI_DISABLE "CUDA_DISABLE_CONTROL"

static const char F_HAMI[] =
    "use HAMi-core's form: a whole number of bytes, or with k, m or g "
    "(binary: 1g = 1024m), e.g. 1024m";

/* One value; true when it gives a limit (*out set). A zero ("no limit",
 * as in HAMi-core) sets *zero and is said once every value is known; a
 * refused value sets *refused. */
static bool hami_value(struct load *c, const char *name, const char *val,
                       uint64_t *out, bool *zero, bool *refused)
{
    char what[WHAT_MAX], v[SHOW_MAX + 4];
    size_t junk = 0;
    uint64_t b = 0;
    enum gm_perr e = gm_parse_hami_size_ex(val, &b, &junk);

    if (e == GM_PERR_OK && b == 0) {
        *zero = true;
        return false;
    }
    if (e == GM_PERR_OK) {
        *out = b;
        return true;
    }
    gm_pol_show(val, v, sizeof v);
    if (e == GM_PERR_TRAILING && junk == 1 && val[0] == '0')
        snprintf(what, sizeof what, "starts with 0, which HAMi-core reads as "
                 "octal or hex; write it in decimal without leading zeros");
    else
        gm_pol_perr_what(e, K_SIZE, val, junk, what, sizeof what);
    gm_pol_msg(c, true, "gpumem: %s='%s' %s; %s", name, v, what, F_HAMI);
    c->bad[GM_F_LIMIT] = true;
    *refused = true;
    return false;
}

/* CUDA_DEVICE_MEMORY_LIMIT_<N>: N as HAMi-core writes it ("%d"). */
static int dev_of(const char *entry, size_t nlen)
{
    static const size_t base = sizeof HAMI_LIMIT "_" - 1;
    const char *n = entry + base;
    size_t len = nlen - base;

    if (len == 0 || len > 2 || (len > 1 && n[0] == '0'))
        return -1;
    if (n[0] < '0' || n[0] > '9' || (len == 2 && (n[1] < '0' || n[1] > '9')))
        return -1;
    int dev = len == 1 ? n[0] - '0' : (n[0] - '0') * 10 + (n[1] - '0');
    return dev < GM_MAX_DEVICES ? dev : -1;
}

/* The values found, before they become limits or caps. */
struct hami {
    uint64_t all;                   /* 0 = none */
    uint64_t dev[GM_MAX_DEVICES];
    bool zero_all;                  /* written as 0: no limit */
    bool zero_dev[GM_MAX_DEVICES];
};

static void hami_devices(struct load *c, struct hami *h)
{
    char *const *e;
    char name[NAME_SHOW_MAX + 4];

    for (e = c->envp; e != NULL && *e != NULL; e++) {
        const char *eq = strchr(*e, '=');
        size_t nlen;
        if (eq == NULL || strncmp(*e, HAMI_LIMIT "_", sizeof HAMI_LIMIT) != 0)
            continue;
        nlen = (size_t)(eq - *e);
        snprintf(name, sizeof name, "%.*s", (int)(nlen < NAME_SHOW_MAX
                                                  ? nlen : NAME_SHOW_MAX), *e);
        int dev = dev_of(*e, nlen);
        if (dev < 0) {
            if (strcmp(name, HAMI_CACHE) != 0)
                gm_pol_msg(c, false, "gpumem: %s does not name a device "
                    "ordinal from 0 to 63; ignored", name);
            continue;
        }
        if (c->hami_dev[dev] != NULL)
            continue;   /* the first entry wins, as with getenv */
        if (eq[1] == '\0')
            continue;   /* empty: unset, as in HAMi-core */
        c->hami_dev[dev] = eq + 1;
        (void)hami_value(c, name, eq + 1, &h->dev[dev], &h->zero_dev[dev],
                         &c->hami_refused_dev[dev]);
    }
}

static void as_limits(struct load *c, const struct hami *h)
{
    struct gm_policy *p = c->p;
    unsigned d;
    bool any = h->all != 0;

    for (d = 0; d < GM_MAX_DEVICES; d++)
        any |= h->dev[d] != 0;
    /* The scheduler's grant is the job's limit: per-device defaults of
     * the admin file do not outrank it on their devices. */
    if (any)
        gm_pol_drop_admin_devs(c);

    if (h->all != 0) {
        p->limit.kind = GM_LIMIT_BYTES;
        p->limit.bytes = h->all;
        p->src[GM_F_LIMIT] = GM_SRC_ENV;
        p->hami = true;
    }
    for (d = 0; d < GM_MAX_DEVICES; d++) {
        if (h->dev[d] == 0)
            continue;
        p->dev_limit[d].kind = GM_LIMIT_BYTES;
        p->dev_limit[d].bytes = h->dev[d];
        p->dev_limit_set[d] = true;
        c->dev_hami[d] = true;
        p->src[GM_F_LIMIT_N] = GM_SRC_ENV;
        p->hami = true;
    }
}

bool gm_pol_hami_held(const struct gm_limit *l, uint64_t cap,
                      struct gm_limit *out)
{
    if (cap == 0 || !(l->kind == GM_LIMIT_NONE ||
                      (l->kind == GM_LIMIT_BYTES && l->bytes > cap)))
        return false;
    *out = (struct gm_limit){ GM_LIMIT_BYTES, cap, 0.0, 0 };
    return true;
}

/* One cap against the job's own limit: a line when the two compare and
 * the job's is above (else it is taken per device, shim/account/device.c).
 * dev < 0: the limit of every device. */
static void cap_note(struct load *c, const struct gm_limit *l,
                     const char *lname, const char *lval, const char *hname,
                     const char *hval, uint64_t cap, int dev)
{
    char a[SHOW_MAX + 4], b[SHOW_MAX + 4], sz[32], on[32] = "";
    struct gm_limit held;

    if (!gm_pol_hami_held(l, cap, &held))
        return;
    gm_pol_show(lval, a, sizeof a);
    gm_pol_show(hval, b, sizeof b);
    gm_format_size(cap, sz, sizeof sz);
    if (dev >= 0)
        snprintf(on, sizeof on, " on device %d", dev);
    gm_pol_msg(c, false, "gpumem: %s='%s' is above %s='%s', the scheduler's "
        "grant; the limit%s is %s", lname, a, hname, b, on, sz);
}

/* The grants over the job's own limits. Only a value the job wrote and
 * that was taken is named: an unset GPUMEM_LIMIT beside a job's
 * GPUMEM_LIMIT_<N>, a refused one (said already) and an admin default
 * are simply held. */
static void as_caps(struct load *c, const struct hami *h)
{
    struct gm_policy *p = c->p;
    char ln[32], hn[48];
    unsigned d;
    bool own = c->val[GM_F_LIMIT] != NULL && p->src[GM_F_LIMIT] == GM_SRC_ENV;

    p->hami_cap = h->all;
    memcpy(p->hami_cap_dev, h->dev, sizeof p->hami_cap_dev);
    p->hami_capped = h->all != 0;
    for (d = 0; d < GM_MAX_DEVICES; d++)
        p->hami_capped |= h->dev[d] != 0;
    if (h->all != 0 && own)
        cap_note(c, &p->limit, "GPUMEM_LIMIT", c->val[GM_F_LIMIT],
                 HAMI_LIMIT, c->hami_val, h->all, -1);
    for (d = 0; d < GM_MAX_DEVICES; d++) {
        uint64_t cap = h->dev[d] != 0 ? h->dev[d] : h->all;
        const char *hv = h->dev[d] != 0 ? c->hami_dev[d] : c->hami_val;
        if (cap == 0)
            continue;
        if (h->dev[d] != 0)
            snprintf(hn, sizeof hn, HAMI_LIMIT "_%u", d);
        else
            snprintf(hn, sizeof hn, HAMI_LIMIT);
        if (c->dev_env[d]) {
            snprintf(ln, sizeof ln, "GPUMEM_LIMIT_%u", d);
            cap_note(c, &p->dev_limit[d], ln, c->dev_val[d], hn, hv, cap,
                     (int)d);
        } else if (h->dev[d] != 0 && !p->dev_limit_set[d] && own) {
            cap_note(c, &p->limit, "GPUMEM_LIMIT", c->val[GM_F_LIMIT], hn,
                     hv, cap, (int)d);
        }
    }
}

/* What a 0 leaves: as in HAMi-core, a device's 0 sets nothing of its own
 * and the device falls back to CUDA_DEVICE_MEMORY_LIMIT. */
static void zero_notes(struct load *c, const struct hami *h, bool as_limit)
{
    char v[SHOW_MAX + 4], sz[32];
    unsigned d;

    if (h->zero_all)
        gm_pol_msg(c, false, "gpumem: " HAMI_LIMIT "='0' means no limit (as "
            "in HAMi-core)");
    if (h->all != 0) {
        gm_pol_show(c->hami_val, v, sizeof v);
        gm_format_size(h->all, sz, sizeof sz);
    }
    for (d = 0; d < GM_MAX_DEVICES; d++) {
        if (!h->zero_dev[d])
            continue;
        if (h->all != 0)
            gm_pol_msg(c, false, "gpumem: " HAMI_LIMIT "_%u='0' sets no "
                "limit of its own (as in HAMi-core); device %u %s "
                HAMI_LIMIT "='%s' (%s)", d, d,
                as_limit ? "takes" : "is held to the grant of", v, sz);
        else
            gm_pol_msg(c, false, "gpumem: " HAMI_LIMIT "_%u='0' means no "
                "limit (as in HAMi-core); device %u %s", d, d,
                as_limit ? "gets no limit from HAMi-core's variables"
                         : "has no grant");
    }
}

void gm_pol_hami_apply(struct load *c, bool as_limit)
{
    struct hami h;
    const char *v = gm_pol_env_find(c->envp, HAMI_LIMIT);

    memset(&h, 0, sizeof h);
    if (v != NULL && v[0] != '\0') {
        c->hami_val = v;
        (void)hami_value(c, HAMI_LIMIT, v, &h.all, &h.zero_all,
                         &c->hami_refused);
    }
    hami_devices(c, &h);
    zero_notes(c, &h, as_limit);
    if (as_limit)
        as_limits(c, &h);
    else
        as_caps(c, &h);
    if (gm_pol_env_find(c->envp, HAMI_CACHE) != NULL)
        c->p->hami_shared_cache = true;
}

/* Go's strconv.ParseBool, which HAMi's device plugin applies to it:
 * 1 when true, 0 when false, -1 when neither. */
static int go_bool(const char *v)
{
    static const char *const t[] = { "1", "t", "T", "TRUE", "true", "True" };
    static const char *const f[] = { "0", "f", "F", "FALSE", "false",
                                     "False" };
    size_t i;

    for (i = 0; i < 6; i++) {
        if (strcmp(v, t[i]) == 0)
            return 1;
        if (strcmp(v, f[i]) == 0)
            return 0;
    }
    return -1;
}

void gm_pol_hami_disable(struct load *c)
{
    struct gm_policy *p = c->p;
    const char *v = gm_pol_env_find(c->envp, HAMI_DISABLE);
    char shown[SHOW_MAX + 4];
    unsigned d;

    if (v == NULL || v[0] == '\0')
        return;
    gm_pol_show(v, shown, sizeof shown);
    int on = go_bool(v);
    if (on < 0) {
        gm_pol_msg(c, false, "gpumem: %s='%s' is not a boolean (use true or "
            "false); ignored", HAMI_DISABLE, shown);
        return;
    }
    if (on == 0)
        return;
    if (p->admin_state != GM_ADMIN_READ || !p->admin.allow_disable) {
        gm_pol_msg(c, false, "gpumem: %s='%s' is ignored: the admin policy "
            "(%s) does not allow it (GPUMEM_ALLOW_DISABLE=1); limits stay in "
            "force", HAMI_DISABLE, shown, gm_admin_policy_path);
        return;
    }
    gm_pol_msg(c, false, "gpumem: %s='%s': no limit is enforced in this "
        "process (allowed by GPUMEM_ALLOW_DISABLE=1, %s:%u)", HAMI_DISABLE,
        shown, p->admin_path, p->admin.line[GM_R_ALLOW_DISABLE]);
    memset(&p->limit, 0, sizeof p->limit);
    for (d = 0; d < GM_MAX_DEVICES; d++) {
        memset(&p->dev_limit[d], 0, sizeof p->dev_limit[d]);
        p->dev_limit_set[d] = false;
    }
    memset(&p->admin.max_limit, 0, sizeof p->admin.max_limit);
    p->hami_cap = 0;
    memset(p->hami_cap_dev, 0, sizeof p->hami_cap_dev);
    p->hami_capped = false;
    memset(p->group, 0, sizeof p->group);
    memset(&p->group_limit, 0, sizeof p->group_limit);
    memset(&p->static_size, 0, sizeof p->static_size);
    p->mode = GM_MODE_GROW;
    p->disabled = true;
}
