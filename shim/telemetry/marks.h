/*
 * shim/telemetry/marks.h — steps and marks reported by the program
 * (gpumem_step, gpumem_mark) in the telemetry segment: the header's
 * counters, ring records, the mark table (docs/abi.md "History").
 * Every function may be called from any thread at any time; each is a
 * no-op while the segment is not open.
 */
#ifndef GM_MARKS_H
#define GM_MARKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim/telemetry/abi.h"
#include "shim/telemetry/telemetry.h"

/* Step count is now `steps` (the caller's process-wide count): header
 * steps raised to it, one GM_EV_STEP record per device with stats. */
void gm_tel_step(struct gm_tel *t, uint64_t steps);
/* A mark: its label (sanitised, NULL = "") in the mark table, one
 * GM_EV_MARK record per device with stats. */
void gm_tel_mark(struct gm_tel *t, const char *label);

/* Sanitise a label into out (cap bytes, NUL-terminated): valid UTF-8
 * copied, cut at a character boundary before cap; an invalid byte or a
 * control character becomes '?'. NULL is "". Returns the length. */
size_t gm_mark_label(const char *in, char *out, size_t cap);

/* Seqlocked copy of a mark slot expected to hold mark `number`. */
bool gm_tel_read_mark(const struct gm_abi_mark *src, uint64_t number,
                      struct gm_abi_mark *dst);

#endif
