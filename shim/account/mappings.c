/*
 * shim/account/mappings.c — VMM mappings as references on their handle
 * (shim/account/mappings.h holds the rule and its invariants).
 */
#include "shim/account/mappings.h"

#include <stdlib.h>
#include <string.h>

#include "shim/account/account.h"
#include "shim/account/state.h"
#include "shim/telemetry/abi.h"

/* Drop one reference on a handle's entry; the last one ends its charge
 * (the event's API is cuMemRelease, whichever call dropped it). */
static void drop_ref(uint64_t handle)
{
    struct gm_alloc a;
    if (gm_track_unref(GM_NS_HANDLE, handle, &a) == 1) {
        uint64_t t = gm_hook_ticks();
        gm_acct_released(&a, GM_API_MEM_RELEASE, t, t);
    }
}

bool gm_map_hold(uint64_t handle)
{
    return gm_track_ref(GM_NS_HANDLE, handle);
}

void gm_map_done(uint64_t ptr, uint64_t size, uint64_t handle, bool ok)
{
    if (!ok) {
        drop_ref(handle);
        return;
    }
    struct gm_alloc h;
    uint8_t dev = gm_track_find(GM_NS_HANDLE, handle, &h) ? h.dev : 0;
    struct gm_alloc m = {
        .key = ptr, .size = size, .aux = handle, .dev = dev,
        .ns = GM_NS_MAP, .api = GM_API_MEM_CREATE,
        .flags = GM_AF_UNCHARGED, .refs = 1,
    };
    struct gm_alloc old;
    /* A mapping already recorded at this start was unmapped where the
     * shim could not see it: its reference goes. Without room for the
     * entry the reference stays: the charge then lasts to the end (the
     * safe side). */
    if (gm_track_insert(&m, &old) == 1)
        drop_ref(old.aux);
}

static bool unmap_keep(struct gm_unmap *u, const struct gm_alloc *a)
{
    if (u->n == u->cap) {
        size_t cap = u->cap * 2;
        struct gm_alloc *v = u->v == u->own ? malloc(cap * sizeof *v)
                                            : realloc(u->v, cap * sizeof *v);
        if (v == NULL)
            return false;
        if (u->v == u->own)
            memcpy(v, u->own, sizeof u->own);
        u->v = v;
        u->cap = cap;
    }
    u->v[u->n++] = *a;
    return true;
}

/* The walk's part: starts of mappings in [lo, hi) not next to each other. */
struct scan {
    uint64_t lo, hi;
    uint64_t *keys;
    size_t n, cap;
};

static void scan_one(void *ctx, const struct gm_alloc *a)
{
    struct scan *s = ctx;
    if (a->ns != GM_NS_MAP || a->key < s->lo || a->key >= s->hi)
        return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        uint64_t *k = realloc(s->keys, cap * sizeof *k);
        if (k == NULL)
            return;
        s->keys = k;
        s->cap = cap;
    }
    s->keys[s->n++] = a->key;
}

void gm_unmap_take(struct gm_unmap *u, uint64_t ptr, uint64_t size)
{
    u->v = u->own;
    u->n = 0;
    u->cap = sizeof u->own / sizeof u->own[0];
    uint64_t end = size > UINT64_MAX - ptr ? UINT64_MAX : ptr + size;
    /* The common case: mappings back to back from ptr, each found by its
     * start. */
    uint64_t at = ptr;
    struct gm_alloc a;
    while (at < end && gm_track_remove(GM_NS_MAP, at, &a)) {
        if (!unmap_keep(u, &a)) {
            gm_track_insert(&a, NULL);
            return;
        }
        at = a.size > UINT64_MAX - at ? UINT64_MAX : at + a.size;
    }
    if (at >= end)
        return;
    /* Anything else in the range: a walk of the table (a hole, or a
     * mapping that does not start where the last one ended). */
    struct scan s = { .lo = at, .hi = end };
    bool truncated;
    (void)gm_track_walk(scan_one, &s, UINT64_MAX, &truncated);
    for (size_t i = 0; i < s.n; i++)
        if (gm_track_remove(GM_NS_MAP, s.keys[i], &a) && !unmap_keep(u, &a))
            gm_track_insert(&a, NULL);
    free(s.keys);
}

void gm_unmap_done(struct gm_unmap *u, bool ok)
{
    for (size_t i = 0; i < u->n; i++) {
        if (ok)
            drop_ref(u->v[i].aux);
        else
            gm_track_insert(&u->v[i], NULL);
    }
    if (u->v != u->own)
        free(u->v);
    u->v = u->own;
    u->n = 0;
}
