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

struct gm_budget {
    _Atomic uint64_t used;
    _Atomic uint64_t peak;
    _Atomic uint64_t limit;   /* 0 = none */
};

/* Reserve `size` if used + size <= limit (or no limit). On success returns
 * true and stores the new used value; on refusal returns false and stores
 * the used value it saw. Never wraps. */
bool gm_budget_reserve(struct gm_budget *b, uint64_t size, uint64_t *used_out);
/* Charge `size` regardless of the limit (context memory, soft limits);
 * saturates at UINT64_MAX. Returns the new used value. */
uint64_t gm_budget_force(struct gm_budget *b, uint64_t size);
/* Release `size`, clamped so used never goes below 0. Returns new used. */
uint64_t gm_budget_release(struct gm_budget *b, uint64_t size);
/* Would `size` more fit right now? (No change.) */
bool gm_budget_fits(const struct gm_budget *b, uint64_t size);
/* limit - used, clamped at 0; UINT64_MAX when there is no limit. */
uint64_t gm_budget_room(const struct gm_budget *b);
uint64_t gm_budget_used(const struct gm_budget *b);
uint64_t gm_budget_peak(const struct gm_budget *b);
uint64_t gm_budget_limit(const struct gm_budget *b);
void gm_budget_set_limit(struct gm_budget *b, uint64_t limit);

#endif
