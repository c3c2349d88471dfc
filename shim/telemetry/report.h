/*
 * shim/telemetry/report.h — the exit report: one block per used device (limit, peak
 * and when, context memory, counts, live allocations left — the leak
 * check —, fragmentation at peak, allocation latency p50/p99, events
 * lost), as text lines for stderr or as one JSON document. Built from a
 * struct gm_snapshot, so the shim (at exit) and `gpumem report` (from a
 * live or kept segment) print the same figures. Definitions of every
 * figure: docs/metrics.md.
 *
 * All functions are snprintf-like: they write at most cap bytes (always
 * NUL-terminated when cap > 0) and return the length the whole output
 * needs, excluding the NUL. No malloc.
 */
#ifndef GM_REPORT_H
#define GM_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim/telemetry/telemetry.h"

/* Flags for gm_report_text / gm_report_json. */
#define GM_REPORT_LIVE 1u   /* the process still runs: "now", not "at exit" */

/* Text: one line per used device, each starting "gpumem: device N: ";
 * a single "gpumem: no device memory was used" line when none was. */
size_t gm_report_text(const struct gm_snapshot *s, unsigned flags, char *buf,
                      size_t cap);
/* JSON: one object (see docs/metrics.md for the keys), ending in '\n'. */
size_t gm_report_json(const struct gm_snapshot *s, unsigned flags, char *buf,
                      size_t cap);
/* The shim's exit report from its own segment (t: open, or NULL; read
 * with the layout it laid out, t->w, not the header's geometry): text or
 * JSON, "at exit" wording. Uses one static snapshot; a concurrent second
 * call returns 0 and writes nothing. */
struct gm_tel;
size_t gm_report_from_segment(const struct gm_tel *t, bool json, char *buf,
                              size_t cap);

/* The OOM snapshot in one line (no prefix, no newline): "refused 256 MiB
 * at step 412: 3.9 GiB used, 61% in 128 blocks of 16 MiB allocated over
 * the last 300 steps", then "; largest free gap 12 MiB (frag 4.1%)" when
 * fragmentation is tracked. Without steps (steps_known false) the time
 * since start_ns replaces the step ("at 12.5 s") and ages replace step
 * counts ("over the last 9.8 s"). Definitions: docs/metrics.md. */
size_t gm_report_oom_line(const struct gm_abi_oom *o, uint64_t start_ns,
                          bool steps_known, char *buf, size_t cap);
/* "256 MiB", "3.9 GiB", "512 B": binary units, no decimal when whole. */
size_t gm_format_size_short(uint64_t bytes, char *buf, size_t cap);

/* True when a device block shows any use worth a report block. */
bool gm_report_dev_used(const struct gm_abi_dev *d);

/* Quantile of a log2 histogram (bucket b counts values in [2^b, 2^(b+1)),
 * bucket 0 also 0 and 1, the last bucket everything above): the smallest
 * bucket whose cumulative count reaches ceil(total * per_mille / 1000),
 * reported as its upper bound 2^(b+1) — "the quantile is below this".
 * 0 when the histogram is empty; per_mille is clamped to 1..1000. */
uint64_t gm_hist_quantile(const uint64_t *hist, unsigned nbuckets,
                          unsigned per_mille);

/* "850 ns", "65.5 µs", "1.2 ms", "3.4 s" (one decimal above ns). */
size_t gm_format_latency(uint64_t ns, char *buf, size_t cap);

#endif
