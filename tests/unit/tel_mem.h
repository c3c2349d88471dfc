/*
 * tests/unit/tel_mem.h — a telemetry segment in process memory for the
 * writer's unit tests: gm_tel_open_mem over an aligned buffer of the
 * layout's size (ring of `ring` records, `devs` device blocks), the
 * policy summary "test". Returns the buffer (the caller frees it after
 * gm_tel_close).
 */
#ifndef GM_TEST_TEL_MEM_H
#define GM_TEST_TEL_MEM_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "shim/telemetry/telemetry.h"

static inline void *gm_test_tel_mem(struct gm_tel *t, uint32_t ring,
                                    uint32_t devs)
{
    struct gm_tel_params p = { .ring_events = ring, .dev_slots = devs,
                               .policy_summary = "test" };
    size_t len = gm_tel_layout_size(ring, devs);
    void *mem = aligned_alloc(64, (len + 63) / 64 * 64);
    ck_assert_ptr_nonnull(mem);
    memset(t, 0, sizeof *t);
    ck_assert_int_eq(gm_tel_open_mem(t, mem, len, &p), 0);
    return mem;
}

#endif
