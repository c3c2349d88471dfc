/*
 * shim/account/contexts.h — the contexts whose memory the shim charged:
 * context handle -> device, bytes charged (to the device's budget and,
 * in a group, to the group), whether it is the device's primary context.
 *
 * Invariants: a context is listed exactly while its charge stands, from
 * its measured creation until its end is seen (cuCtxDestroy, the primary
 * context's last release, a reset); at most one primary context per
 * device is listed (its wrappers run under the device's primary lock).
 * The table is fixed (GM_CTX_MAX created contexts, and one primary
 * context per device, which always fits) and behind one mutex: contexts
 * are made and ended rarely, never on the allocation path. A created
 * context that does not fit is charged all the same and stays charged
 * after its end (the limit errs on the safe side); its device is marked
 * for good as one where the list may not know every context.
 */
#ifndef GM_CONTEXTS_H
#define GM_CONTEXTS_H

#include <stdbool.h>
#include <stdint.h>

#define GM_CTX_MAX 256

struct gm_ctx_ent {
    uintptr_t ctx;      /* the driver's handle */
    uint64_t bytes;     /* charged to the device's budget */
    int dev;
    bool primary;       /* the device's primary context */
};

/* List a charged context; false when the table is full (created ones). */
bool gm_ctx_add(const struct gm_ctx_ent *e);
/* Take a context out of the list (copied to *out); false when unlisted. */
bool gm_ctx_take(uintptr_t ctx, struct gm_ctx_ent *out);
/* The same for a destroy, before the driver's call: until
 * gm_ctx_ending_settled (the driver answered: ended, or listed again)
 * the context still counts as one of its device's in gm_ctx_listed_on,
 * since a refused destroy leaves it alive. */
bool gm_ctx_take_ending(uintptr_t ctx, struct gm_ctx_ent *out);
void gm_ctx_ending_settled(int dev);
/* How many contexts of dev are listed (its primary one included, and
 * those a destroy took and the driver has not answered for); -1
 * when a context of dev could not be listed (the list may not know them
 * all). *gen: the list's generation then (gm_ctx_generation). */
int gm_ctx_listed_on(int dev, uint64_t *gen);
/* Counts every change of the list (an add, a failed add, a take): equal
 * generations mean no context was listed or unlisted in between. */
uint64_t gm_ctx_generation(void);
/* The same for the device's listed primary context. */
bool gm_ctx_take_primary(int dev, struct gm_ctx_ent *out);
/* True when the device's primary context is listed. */
bool gm_ctx_has_primary(int dev);
/* The device's primary-context lock: held by a wrapper from its look at
 * the list, across the real retain, release or reset, to its change of
 * the list, so that a retain and a release (or two retains) of one
 * primary context cannot interleave there. No-op for a bad ordinal. */
void gm_ctx_primary_lock(int dev);
void gm_ctx_primary_unlock(int dev);
/* The bytes of the first context measured on dev (0: none yet): the
 * estimate for a later context where nothing can measure it. */
uint64_t gm_ctx_first_bytes(int dev);
void gm_ctx_set_first_bytes(int dev, uint64_t bytes);
/* Fork child: no context survives. */
void gm_ctx_reset(void);

#endif
