/*
 * tools/cli/report_trend.h — what `gpumem report` adds from the history and
 * the leak analysis (tools/lib/leak.h): the verdict line per device, the
 * "leak" object in each device of the JSON, and the --every table.
 *
 * Invariants: one analysis per device per report, from one drain of the
 * ring and the snapshot the rest of the report prints.
 */
#ifndef GM_REPORT_TREND_H
#define GM_REPORT_TREND_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/lib/leak.h"
#include "tools/lib/reader.h"

struct gm_report_leaks {
    bool have[GM_ABI_MAX_DEVICES];
    struct gm_leak dev[GM_ABI_MAX_DEVICES];
};

/* Analyse every device the snapshot shows used. */
void gm_rl_compute(struct gm_report_leaks *rl, const struct gm_seg *seg,
                   const struct gm_snapshot *s, const struct gm_abi_record *ev,
                   size_t n, uint64_t lost);
/* The same from events alone (a trace: no history); marks are used when
 * the events hold a STEP. */
void gm_rl_compute_events(struct gm_report_leaks *rl,
                          const struct gm_snapshot *s,
                          const struct gm_abi_record *ev, size_t n,
                          uint64_t lost);
void gm_rl_free(struct gm_report_leaks *rl);

/* One line per analysed device: "gpumem: device 0: grows ...\n". */
void gm_rl_text(FILE *f, const struct gm_report_leaks *rl);

/* The report JSON (one object) with ,"leak":{...} added at the end of each
 * {"device":N,...} object of its "devices" array, and with every > 0 also
 * ,"every":[{"step","t_s","floor_bytes","peak_bytes","live_allocs"},...]
 * (the rows of the --every table). malloc'd, NUL-terminated; NULL when out
 * of memory or json has no such array (then print json). */
char *gm_rl_splice_json(const char *json, const struct gm_report_leaks *rl,
                        uint64_t every);

struct gm_timeline;
/* The image's timeline of a segment: the history's buckets before the
 * ring's oldest event when the ring lost the start (then those events are
 * not counted lost on the image), every ring event, the marks and step
 * ticks, and each growing device's fitted trend. */
void gm_rl_timeline(struct gm_timeline *tl, const struct gm_report_leaks *rl,
                    const struct gm_seg *seg, const struct gm_abi_record *ev,
                    size_t n, uint64_t lost);

/* The table of every `every` steps (or points when no step is known) of
 * each analysed device's series. */
void gm_rl_every(FILE *f, const struct gm_report_leaks *rl, uint64_t every);

#endif
