/*
 * shim/telemetry/oomsum.c — grouping live allocations for the OOM
 * snapshot (contract in shim/telemetry/oomsum.h).
 */
#include "shim/telemetry/oomsum.h"

#include <string.h>

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

static unsigned log2_of(uint64_t v)
{
    return 63u - (unsigned)__builtin_clzll(v | 1);
}

void gm_oomsum_init(struct gm_oomsum *s, uint64_t now_ns)
{
    memset(s, 0, sizeof *s);
    s->now_ns = now_ns;
    s->now_t = (uint32_t)(now_ns >> 24);
}

void gm_oomsum_add(struct gm_oomsum *s, uint64_t size, unsigned api,
                   uint32_t birth_t, uint32_t birth_step)
{
    unsigned k = log2_of(size);
    s->live_allocs++;
    s->live_bytes = sat_add(s->live_bytes, size);
    uint32_t i = 0;
    while (i < s->n && !(s->g[i].api == api && s->g[i].size_log2 == k))
        i++;
    if (i == s->n) {
        if (s->n == GM_OOMSUM_GROUPS) {
            s->other_count++;
            s->other_bytes = sat_add(s->other_bytes, size);
            return;
        }
        s->n++;
        memset(&s->g[i], 0, sizeof s->g[i]);
        s->g[i].api = (uint16_t)api;
        s->g[i].size_log2 = (uint16_t)k;
        s->g[i].size_min = size;
        s->g[i].oldest_step = birth_step;
        s->g[i].newest_step = birth_step;
    }
    struct gm_abi_oom_class *c = &s->g[i];
    c->count++;
    c->bytes = sat_add(c->bytes, size);
    if (size < c->size_min)
        c->size_min = size;
    if (size > c->size_max)
        c->size_max = size;
    if (birth_step < c->oldest_step)
        c->oldest_step = birth_step;
    if (birth_step > c->newest_step)
        c->newest_step = birth_step;
    if (birth_t != 0) {
        uint32_t age = s->now_t - birth_t; /* modulo 2^32 */
        if (s->known[i] == 0 || age > s->age_max[i])
            s->age_max[i] = age;
        if (s->known[i] == 0 || age < s->age_min[i])
            s->age_min[i] = age;
        s->known[i]++;
    }
}

static bool before(const struct gm_abi_oom_class *a,
                   const struct gm_abi_oom_class *b)
{
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes;
    return a->size_log2 < b->size_log2 ||
           (a->size_log2 == b->size_log2 && a->api < b->api);
}

static uint64_t birth_ns(const struct gm_oomsum *s, uint32_t age)
{
    uint64_t back = (uint64_t)age << 24;
    return back < s->now_ns ? s->now_ns - back : 0;
}

void gm_oomsum_finish(struct gm_oomsum *s, struct gm_abi_oom *out)
{
    for (uint32_t i = 0; i < s->n; i++) {
        if (s->known[i] != 0) {
            s->g[i].oldest_ns = birth_ns(s, s->age_max[i]);
            s->g[i].newest_ns = birth_ns(s, s->age_min[i]);
        }
    }
    /* Insertion sort: at most 64 groups, on a cold path. */
    for (uint32_t i = 1; i < s->n; i++) {
        struct gm_abi_oom_class c = s->g[i];
        uint32_t j = i;
        while (j > 0 && before(&c, &s->g[j - 1])) {
            s->g[j] = s->g[j - 1];
            j--;
        }
        s->g[j] = c;
    }
    uint32_t keep = s->n < GM_ABI_OOM_CLASSES ? s->n : GM_ABI_OOM_CLASSES;
    memcpy(out->classes, s->g, keep * sizeof *s->g);
    if (keep < GM_ABI_OOM_CLASSES)
        memset(out->classes + keep, 0,
               (GM_ABI_OOM_CLASSES - keep) * sizeof *s->g);
    out->nclasses = keep;
    out->other_count = s->other_count;
    out->other_bytes = s->other_bytes;
    for (uint32_t i = keep; i < s->n; i++) {
        out->other_count = sat_add(out->other_count, s->g[i].count);
        out->other_bytes = sat_add(out->other_bytes, s->g[i].bytes);
    }
    out->live_allocs = s->live_allocs;
    out->live_bytes = s->live_bytes;
}
