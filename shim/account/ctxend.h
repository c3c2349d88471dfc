/*
 * shim/account/ctxend.h — what a context's end gives back: the driver frees
 * every allocation, array and mipmapped array made in a context when the
 * context ends (cuCtxDestroy, the primary context's last release, a reset),
 * without a free the shim could see; their entries are released here, so
 * that the charge follows the memory instead of waiting for the driver to
 * hand the same addresses out again.
 *
 * Which entries died, on the device the context was on:
 *  - a device pointer (plain, pitched, managed, served as managed after a
 *    refusal) when the driver answers CUDA_ERROR_INVALID_VALUE for it
 *    (cuPointerGetAttribute, no context made current for it); without
 *    that query, when the rule below holds;
 *  - arrays and mipmapped arrays only when the ended context was the
 *    device's only listed one, the list knows every context of the
 *    device, and it did not change until the walk ended (its generation):
 *    their handles cannot be asked about once freed.
 * Stream-ordered allocations (their pool holds the charge), VMM handles
 * and pinned host memory are never touched here.
 *
 * Invariants: an entry is released at most once, and only the entry that
 * was in the table when it was judged dead (gm_track_take_same); one the
 * driver reports live again after it was taken is put back. Nothing is
 * released on any doubt (another answer, a context listed meanwhile): the
 * limit errs on the safe side. Cold path only: a walk of the whole table.
 */
#ifndef GM_CTXEND_H
#define GM_CTXEND_H

#include <stdint.h>

#include "shim/account/track.h"

/* Called for each entry released (after its charge went back). */
typedef void (*gm_ctxend_fn)(void *arg, const struct gm_alloc *a);

struct gm_ctxend_sum {
    uint64_t entries;   /* entries released */
    uint64_t bytes;     /* their sizes */
};

/* Release what the end of a context on `dev` freed (the context already
 * taken out of the list); each released entry goes to fn (may be NULL).
 * Their telemetry: a free each for used and the fragmentation log (not a
 * free of the program's), then one GM_EV_CTX_FREED
 * record for them all. */
struct gm_ctxend_sum gm_ctxend_release(int dev, gm_ctxend_fn fn, void *arg)
    __attribute__((cold));

#endif
