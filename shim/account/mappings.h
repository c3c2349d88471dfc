/*
 * shim/account/mappings.h — VMM mappings keep their handle's memory: the
 * driver frees a cuMemCreate handle's memory only once the handle is
 * released and no mapping of it is left, so its charge ends then too.
 *
 * Each mapping made through cuMemMap is an entry of the live-allocation
 * table (GM_NS_MAP: key the mapping's start, size its length, aux its
 * handle, GM_AF_UNCHARGED) and holds one reference on the handle's entry
 * (GM_NS_HANDLE), next to the one cuMemCreate gave and those of
 * cuMemRetainAllocationHandle. Whoever drops the last reference —
 * cuMemRelease or the cuMemUnmap of the last mapping — releases the
 * charge.
 *
 * Invariants: a mapping's reference is taken before the driver maps (so
 * a release on another thread meanwhile cannot end the charge of memory
 * about to be mapped) and given back if the driver refuses; an unmap
 * takes its entries out before the driver unmaps and puts them back if it
 * refuses, so two threads never both drop one mapping's reference.
 * Handles the shim never charged (made before it was active, or passed
 * through) get no entry.
 */
#ifndef GM_MAPPINGS_H
#define GM_MAPPINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim/account/track.h"

/* Before cuMemMap: take the mapping's reference on the handle; false
 * when the handle is not one the shim charges. */
bool gm_map_hold(uint64_t handle);
/* After it (only when gm_map_hold returned true): on success record the
 * mapping [ptr, ptr + size); on failure give the reference back (which
 * may end the charge, when the handle was released meanwhile). */
void gm_map_done(uint64_t ptr, uint64_t size, uint64_t handle, bool ok);

/* The mappings one cuMemUnmap takes out of the table. */
struct gm_unmap {
    struct gm_alloc *v;  /* the entries taken (small ones in `own`) */
    size_t n, cap;
    struct gm_alloc own[4];
};
/* Before cuMemUnmap(ptr, size): take out every mapping that starts in
 * [ptr, ptr + size). */
void gm_unmap_take(struct gm_unmap *u, uint64_t ptr, uint64_t size);
/* After it: on success drop each mapping's reference on its handle
 * (ending the charge of a released handle's last mapping); on failure put
 * the mappings back. Frees what gm_unmap_take allocated. */
void gm_unmap_done(struct gm_unmap *u, bool ok);

#endif
