/*
 * shim/base/mix.h — a 64-bit mixing function for hash tables whose keys
 * come from outside (recordings, traces, a driver's addresses).
 *
 * Invariant: every bit of the key reaches every bit of the result, so a
 * table may take any bits of it (keys that differ only in their high
 * bits, such as multiples of 2^40, do not share one probe chain). The
 * function is the finalizer of the SplitMix64 generator (its published
 * constants); a bijection, so distinct keys never mix to one value.
 */
#ifndef GM_MIX_H
#define GM_MIX_H

#include <stdint.h>

static inline uint64_t gm_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

#endif
