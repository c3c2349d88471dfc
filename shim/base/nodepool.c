/*
 * shim/base/nodepool.c — slab mapping for shim/base/nodepool.h.
 */
#include "shim/base/nodepool.h"

#include <sys/mman.h>

#define SLAB_FIRST ((size_t)64 << 10)
#define SLAB_MAX ((size_t)8 << 20)

struct gm_nodepool_slab {
    struct gm_nodepool_slab *next;
    size_t bytes;
};

int gm_nodepool_grow(struct gm_nodepool *p)
{
    size_t bytes = p->next_slab ? p->next_slab : SLAB_FIRST;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    struct gm_nodepool_slab *s = m;
    s->next = p->slabs;
    s->bytes = bytes;
    p->slabs = s;
    /* Records start at the first 64-byte boundary after the header. */
    p->bump = (char *)m + 64;
    p->bump_end = (char *)m + bytes;
    p->next_slab = bytes < SLAB_MAX ? bytes * 2 : SLAB_MAX;
    return 0;
}

void gm_nodepool_destroy(struct gm_nodepool *p)
{
    struct gm_nodepool_slab *s = p->slabs;
    while (s != NULL) {
        struct gm_nodepool_slab *next = s->next;
        munmap(s, s->bytes);
        s = next;
    }
    p->spare = NULL;
    p->bump = p->bump_end = NULL;
    p->slabs = NULL;
    p->next_slab = 0;
}
