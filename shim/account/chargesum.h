/*
 * shim/account/chargesum.h — a sum of charges that other threads change
 * by deltas, each delta computed from an exchange (a pool's new reserve
 * against its last one): the sum published as a device's pool reserve.
 *
 * Invariant: the sum is the plain sum of every delta applied, in modular
 * arithmetic, with no clamp. Deltas of two exchanges may be applied in
 * either order (a shrink before the growth it follows), so the sum may be
 * negative for a moment; once every delta is applied it equals the sum of
 * the charges, which is never negative. A clamp at 0 would instead keep
 * the growth forever.
 */
#ifndef GM_CHARGESUM_H
#define GM_CHARGESUM_H

#include <stdatomic.h>
#include <stdint.h>

/* Apply `delta`; returns the sum right after (seq_cst read-modify-write). */
static inline uint64_t gm_chargesum_add(_Atomic uint64_t *sum, int64_t delta)
{
    return atomic_fetch_add(sum, (uint64_t)delta) + (uint64_t)delta;
}

/* The figure to show for a sum: a transiently negative one shows as 0. */
static inline uint64_t gm_chargesum_shown(uint64_t v)
{
    return (int64_t)v < 0 ? 0 : v;
}

#endif
