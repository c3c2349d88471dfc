/*
 * tools/sim/simcuda_va.c — the simulated driver's address bookkeeping: a free
 * extent list (first-fit address allocator with coalescing) and a sorted
 * map of live address ranges.
 *
 * Both are sorted arrays searched by binary search; inserting or removing
 * shifts the tail (cheap for the thousands of entries a workload holds).
 * Invariants: extents are sorted, disjoint and never adjacent (adjacent
 * ones are merged); records are sorted by base and never overlap. Pointers
 * to records are valid only until the next add or delete on that map.
 * Not thread-safe: callers hold the lock that owns the structure.
 */
#include "tools/sim/simcuda.h"

#include <stdlib.h>
#include <string.h>

/* ---- free extents ---------------------------------------------------- */

static bool ext_reserve(struct gm_sim_extents *e, size_t need)
{
    if (e->cap >= need)
        return true;
    size_t cap = e->cap ? e->cap * 2 : 8;
    while (cap < need)
        cap *= 2;
    struct gm_sim_ext *v = realloc(e->v, cap * sizeof *v);
    if (v == NULL)
        return false;
    e->v = v;
    e->cap = cap;
    return true;
}

int gm_sim_ext_init(struct gm_sim_extents *e, uint64_t lo, uint64_t hi)
{
    memset(e, 0, sizeof *e);
    if (!ext_reserve(e, 8))
        return -1;
    e->v[0].lo = lo;
    e->v[0].hi = hi;
    e->n = 1;
    return 0;
}

void gm_sim_ext_fini(struct gm_sim_extents *e)
{
    free(e->v);
    memset(e, 0, sizeof *e);
}

/* Index of the first extent whose lo is above x. */
static size_t ext_upper(const struct gm_sim_extents *e, uint64_t x)
{
    size_t lo = 0, hi = e->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->v[mid].lo <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Removes [a, a + size) from extent i, which contains it. Needs one spare
 * slot (a split adds an extent). */
static void ext_carve(struct gm_sim_extents *e, size_t i, uint64_t a, uint64_t size)
{
    uint64_t lo = e->v[i].lo, hi = e->v[i].hi, end = a + size;

    if (a == lo && end == hi) {
        memmove(&e->v[i], &e->v[i + 1], (e->n - i - 1) * sizeof *e->v);
        e->n--;
    } else if (a == lo) {
        e->v[i].lo = end;
    } else if (end == hi) {
        e->v[i].hi = a;
    } else {
        memmove(&e->v[i + 2], &e->v[i + 1], (e->n - i - 1) * sizeof *e->v);
        e->v[i].hi = a;
        e->v[i + 1].lo = end;
        e->v[i + 1].hi = hi;
        e->n++;
    }
}

uint64_t gm_sim_ext_take(struct gm_sim_extents *e, uint64_t size, uint64_t align)
{
    if (size == 0 || !ext_reserve(e, e->n + 1))
        return 0;
    for (size_t i = 0; i < e->n; i++) {
        uint64_t a = sim_round(e->v[i].lo, align);
        if (a < e->v[i].lo || a >= e->v[i].hi || e->v[i].hi - a < size)
            continue;
        ext_carve(e, i, a, size);
        return a;
    }
    return 0;
}

int gm_sim_ext_take_at(struct gm_sim_extents *e, uint64_t at, uint64_t size)
{
    size_t i = ext_upper(e, at);
    if (size == 0 || i == 0 || !ext_reserve(e, e->n + 1))
        return -1;
    i--;
    if (at >= e->v[i].hi || e->v[i].hi - at < size)
        return -1;
    ext_carve(e, i, at, size);
    return 0;
}

void gm_sim_ext_give(struct gm_sim_extents *e, uint64_t lo, uint64_t size)
{
    uint64_t hi = lo + size;
    size_t i = ext_upper(e, lo);        /* extents [0, i) start at or below lo */
    bool join_prev = i > 0 && e->v[i - 1].hi == lo;
    bool join_next = i < e->n && e->v[i].lo == hi;

    if (size == 0)
        return;
    if (join_prev && join_next) {
        e->v[i - 1].hi = e->v[i].hi;
        memmove(&e->v[i], &e->v[i + 1], (e->n - i - 1) * sizeof *e->v);
        e->n--;
    } else if (join_prev) {
        e->v[i - 1].hi = hi;
    } else if (join_next) {
        e->v[i].lo = lo;
    } else if (ext_reserve(e, e->n + 1)) {
        memmove(&e->v[i + 1], &e->v[i], (e->n - i) * sizeof *e->v);
        e->v[i].lo = lo;
        e->v[i].hi = hi;
        e->n++;
    }
    /* else: out of host memory; the range stays unusable (never reused). */
}

bool gm_sim_ext_all_free(const struct gm_sim_extents *e, uint64_t lo, uint64_t hi)
{
    size_t i = ext_upper(e, lo);
    return i > 0 && e->v[i - 1].lo <= lo && hi <= e->v[i - 1].hi;
}

/* ---- live ranges ------------------------------------------------------ */

/* Index of the first record whose base is above x. */
static size_t rmap_upper(const struct gm_sim_rmap *m, uint64_t x)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->v[mid].base <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int gm_sim_rmap_add(struct gm_sim_rmap *m, const struct gm_sim_rec *r)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        struct gm_sim_rec *v = realloc(m->v, cap * sizeof *v);
        if (v == NULL)
            return -1;
        m->v = v;
        m->cap = cap;
    }
    size_t i = rmap_upper(m, r->base);
    memmove(&m->v[i + 1], &m->v[i], (m->n - i) * sizeof *m->v);
    m->v[i] = *r;
    m->n++;
    return 0;
}

struct gm_sim_rec *gm_sim_rmap_find(struct gm_sim_rmap *m, uint64_t base)
{
    size_t i = rmap_upper(m, base);
    return (i > 0 && m->v[i - 1].base == base) ? &m->v[i - 1] : NULL;
}

struct gm_sim_rec *gm_sim_rmap_covering(struct gm_sim_rmap *m, uint64_t addr)
{
    size_t i = rmap_upper(m, addr);
    if (i == 0)
        return NULL;
    struct gm_sim_rec *r = &m->v[i - 1];
    return addr - r->base < r->size ? r : NULL;
}

struct gm_sim_rec *gm_sim_rmap_from(struct gm_sim_rmap *m, uint64_t lo)
{
    size_t i = lo ? rmap_upper(m, lo - 1) : 0;
    return i < m->n ? &m->v[i] : NULL;
}

void gm_sim_rmap_del(struct gm_sim_rmap *m, struct gm_sim_rec *r)
{
    size_t i = (size_t)(r - m->v);
    memmove(&m->v[i], &m->v[i + 1], (m->n - i - 1) * sizeof *m->v);
    m->n--;
}

void gm_sim_rmap_fini(struct gm_sim_rmap *m)
{
    free(m->v);
    memset(m, 0, sizeof *m);
}
