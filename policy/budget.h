/*
 * policy/budget.h — one device's budget: used, peak and limit as atomics,
 * with reserve-then-commit-or-roll-back semantics.
 *
 * Invariants: `used` only changes by compare-and-swap, so two threads can
 * never both pass the limit; it never wraps (additions that would overflow
 * are refused, subtractions clamp at 0); `peak` >= every value `used` has
 * held (atomic max after each increase). limit == 0 means no limit.
 * No locks; safe from any thread.
 */
#ifndef GM_BUDGET_H
#define GM_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "shim/base/compiler.h"

struct gm_budget {
    _Atomic uint64_t used;
    _Atomic uint64_t peak;
    _Atomic uint64_t limit;   /* 0 = none */
};

/* peak = max(peak, v), atomically. */
static inline void gm_budget_raise_peak(struct gm_budget *b, uint64_t v)
{
    uint64_t p = atomic_load_explicit(&b->peak, memory_order_relaxed);
    while (v > p &&
           !atomic_compare_exchange_weak_explicit(&b->peak, &p, v,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

/* At a commit: peak = max(peak, used now); returns used now and stores
 * the resulting peak in *peak_out (one load of each in the common case
 * where the peak does not move). */
static inline uint64_t gm_budget_note_peak(struct gm_budget *b,
                                           uint64_t *peak_out)
{
    uint64_t u = atomic_load_explicit(&b->used, memory_order_relaxed);
    uint64_t p = atomic_load_explicit(&b->peak, memory_order_relaxed);
    if (GM_UNLIKELY(u > p)) {
        gm_budget_raise_peak(b, u);
        p = atomic_load_explicit(&b->peak, memory_order_relaxed);
    }
    *peak_out = p;
    return u;
}

/* The hold below against `limit` instead of the budget's (0: none). */
static inline bool gm_budget_hold_upto(struct gm_budget *b, uint64_t size,
                                       uint64_t limit, uint64_t *used_out)
{
    uint64_t u = atomic_load_explicit(&b->used, memory_order_relaxed);
    for (;;) {
        if (size > UINT64_MAX - u || (limit != 0 && u + size > limit)) {
            *used_out = u;
            return false;
        }
        if (atomic_compare_exchange_weak_explicit(&b->used, &u, u + size,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
            break;
    }
    *used_out = u + size;
    return true;
}

/* A provisional reservation: as gm_budget_reserve, but peak is left alone
 * (the hold is settled into what was really taken with
 * gm_budget_settle). */
static inline bool gm_budget_hold(struct gm_budget *b, uint64_t size,
                                  uint64_t *used_out)
{
    return gm_budget_hold_upto(
        b, size, atomic_load_explicit(&b->limit, memory_order_relaxed),
        used_out);
}

/* Reserve `size` if used + size <= limit (or no limit). On success returns
 * true and stores the new used value; on refusal returns false and stores
 * the used value it saw. Never wraps. */
static inline bool gm_budget_reserve(struct gm_budget *b, uint64_t size,
                                     uint64_t *used_out)
{
    if (!gm_budget_hold(b, size, used_out))
        return false;
    gm_budget_raise_peak(b, *used_out);
    return true;
}

/* Charge `size` regardless of the limit (context memory, soft limits);
 * saturates at UINT64_MAX. Returns the new used value. */
uint64_t gm_budget_force(struct gm_budget *b, uint64_t size);
/* Hold `size` past the limit (GPUMEM_ON_OOM=warn, before the driver has
 * answered): like gm_budget_hold without the limit, so the peak is left
 * for the commit. False (nothing held) when the count would wrap. */
bool gm_budget_hold_over(struct gm_budget *b, uint64_t size,
                         uint64_t *used_out);
/* used = used + add - sub in one step (saturating at UINT64_MAX, clamped
 * at 0), then peak = max(peak, used): a hold replaced by the real charge
 * never shows both at once. Returns the new used. */
uint64_t gm_budget_settle(struct gm_budget *b, uint64_t add, uint64_t sub);
/* Release `size`, clamped so used never goes below 0. Returns new used. */
static inline uint64_t gm_budget_release(struct gm_budget *b, uint64_t size)
{
    uint64_t u = atomic_load_explicit(&b->used, memory_order_relaxed);
    uint64_t n;
    do {
        n = size > u ? 0 : u - size;
    } while (!atomic_compare_exchange_weak_explicit(
        &b->used, &u, n, memory_order_relaxed, memory_order_relaxed));
    return n;
}
/* Would `size` more fit right now? (No change.) */
bool gm_budget_fits(const struct gm_budget *b, uint64_t size);
/* limit - used, clamped at 0; UINT64_MAX when there is no limit. */
uint64_t gm_budget_room(const struct gm_budget *b);
static inline uint64_t gm_budget_used(const struct gm_budget *b)
{
    return atomic_load_explicit(&b->used, memory_order_relaxed);
}
static inline uint64_t gm_budget_peak(const struct gm_budget *b)
{
    return atomic_load_explicit(&b->peak, memory_order_relaxed);
}
static inline uint64_t gm_budget_limit(const struct gm_budget *b)
{
    return atomic_load_explicit(&b->limit, memory_order_relaxed);
}
void gm_budget_set_limit(struct gm_budget *b, uint64_t limit);

#endif
