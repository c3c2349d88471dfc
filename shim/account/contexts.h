/*
 * shim/account/contexts.h — the contexts whose memory the shim charged:
 * context handle -> device, bytes charged, whether it is the device's
 * primary context and whether the process's group took the bytes too.
 *
 * Invariants: a context is listed exactly while its charge stands, from
 * its measured creation until its end is seen (cuCtxDestroy, the primary
 * context's last release, a reset); at most one primary context per
 * device is listed or claimed. The table is fixed (GM_CTX_MAX entries)
 * and behind one mutex: contexts are made and ended rarely, never on the
 * allocation path. A context that does not fit is charged all the same
 * and stays charged after its end (the limit errs on the safe side).
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
    bool grouped;       /* the group took the bytes too */
};

/* List a charged context; false when the table is full. */
bool gm_ctx_add(const struct gm_ctx_ent *e);
/* Take a context out of the list (copied to *out); false when unlisted. */
bool gm_ctx_take(uintptr_t ctx, struct gm_ctx_ent *out);
/* The same for the device's primary context (claims included: a claim
 * taken this way is dropped and returns false). */
bool gm_ctx_take_primary(int dev, struct gm_ctx_ent *out);
/* Claim the measurement of device dev's primary context: true when it is
 * neither listed nor claimed by another thread (then the caller measures
 * and lists it, or gives the claim back with gm_ctx_unclaim_primary). */
bool gm_ctx_claim_primary(int dev);
void gm_ctx_unclaim_primary(int dev);
/* The bytes of the first context measured on dev (0: none yet): the
 * estimate for a later context where nothing can measure it. */
uint64_t gm_ctx_first_bytes(int dev);
void gm_ctx_set_first_bytes(int dev, uint64_t bytes);
/* Fork child: no context survives. */
void gm_ctx_reset(void);

#endif
