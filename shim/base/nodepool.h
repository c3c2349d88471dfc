/*
 * shim/base/nodepool.h — fixed-size records for the shim's trees (the
 * fragmentation tracker's nodes, the static arena's blocks): carved from
 * mmap'd slabs (64 KiB, doubling to 8 MiB), recycled through a free list,
 * never from malloc, so the structures work inside an allocation hook.
 *
 * Invariants: a zeroed pool is empty and has mapped nothing; records are
 * 8-byte aligned and at least a pointer long; a record on the free list
 * holds the link in its first word; slabs stay mapped until
 * gm_nodepool_destroy. No locking: the owner serialises every call.
 */
#ifndef GM_NODEPOOL_H
#define GM_NODEPOOL_H

#include <stddef.h>

struct gm_nodepool_slab;

struct gm_nodepool {
    void *spare;                      /* recycled records */
    char *bump, *bump_end;            /* uncarved part of the newest slab */
    struct gm_nodepool_slab *slabs;
    size_t next_slab;                 /* bytes of the next slab to map */
};

/* Map the next slab (noinline: the rare path). 0, or -1 without memory. */
int gm_nodepool_grow(struct gm_nodepool *p);
/* Unmap every slab; the pool is empty and reusable afterwards. */
void gm_nodepool_destroy(struct gm_nodepool *p);

/* A record of `size` bytes (the same size on every call for one pool), or
 * NULL when no slab could be mapped. Contents undefined. */
static inline void *gm_nodepool_get(struct gm_nodepool *p, size_t size)
{
    void *r = p->spare;
    if (r != NULL) {
        p->spare = *(void **)r;
        return r;
    }
    if ((size_t)(p->bump_end - p->bump) < size && gm_nodepool_grow(p) != 0)
        return NULL;
    r = p->bump;
    p->bump += size;
    return r;
}

static inline void gm_nodepool_put(struct gm_nodepool *p, void *r)
{
    *(void **)r = p->spare;
    p->spare = r;
}

#endif
