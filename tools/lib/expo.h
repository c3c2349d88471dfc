/*
 * tools/lib/expo.h — the two text formats a metrics scraper reads: the
 * Prometheus text exposition format 0.0.4 and OpenMetrics 1.0.0, as
 * `gpumem exporter` writes them. This file knows the formats, not what
 * gpumem exports (tools/lib/metrics.h).
 *
 * A metric family is written as one block: "# HELP", "# TYPE" (and in
 * OpenMetrics "# UNIT"), then its samples, so a caller collects each
 * family's samples apart (struct gm_expo_buf) and joins them at the end.
 * Family names: a gauge or histogram is named with its unit
 * ("gpumem_used_bytes"); a counter's name ends in "_total", which the
 * OpenMetrics "# TYPE" line leaves out; an info family ends in "_info"
 * (OpenMetrics type info, a gauge of 1 in the Prometheus format).
 *
 * Invariants: every label value written is valid UTF-8 with '\', '"' and
 * newline escaped and every other control character (C0, DEL, C1) and
 * every byte that is not part of valid UTF-8 replaced by U+FFFD, so no
 * text from a segment can end a label, start a line or break the parser.
 * Buffers grow with realloc; on memory exhaustion a buffer is marked
 * failed and later writes are dropped (gm_expo_buf_failed says so).
 */
#ifndef GM_TOOLS_EXPO_H
#define GM_TOOLS_EXPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gm_expo_fmt {
    GM_EXPO_PROM = 0,            /* text/plain; version=0.0.4 */
    GM_EXPO_OPENMETRICS,         /* application/openmetrics-text 1.0.0 */
};

enum gm_expo_type {
    GM_EXPO_GAUGE = 0,
    GM_EXPO_COUNTER,
    GM_EXPO_HISTOGRAM,
    GM_EXPO_INFO,
};

struct gm_expo_family {
    const char *name;            /* as sampled: "gpumem_allocations_total" */
    enum gm_expo_type type;
    const char *unit;            /* "bytes", "seconds", "ratio" or NULL */
    const char *help;            /* one line, ASCII, no backslash */
};

/* A growing byte buffer (NUL-terminated when len > 0). */
struct gm_expo_buf {
    char *p;
    size_t len, cap;
    bool failed;                 /* an allocation failed: content cut */
    size_t limit;                /* 0: none; else fail past this length */
};

void gm_expo_buf_init(struct gm_expo_buf *b, size_t limit);
void gm_expo_buf_free(struct gm_expo_buf *b);
void gm_expo_put(struct gm_expo_buf *b, const char *s, size_t n);
void gm_expo_puts(struct gm_expo_buf *b, const char *s);
void gm_expo_printf(struct gm_expo_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends `name="value"` (a comma first when b->len > 0 and comma is
 * true), the value escaped as above and cut, on a character boundary, to
 * at most max_bytes bytes of its source (0: whole). */
void gm_expo_label(struct gm_expo_buf *b, bool comma, const char *name,
                   const char *value, size_t max_bytes);

/* The "# HELP" / "# TYPE" / "# UNIT" lines of a family. */
void gm_expo_header(struct gm_expo_buf *b, const struct gm_expo_family *f,
                    enum gm_expo_fmt fmt);

/* One sample line: name+suffix, "{labels}" when labels is non-empty (and
 * extra appended inside the braces, e.g. `le="0.5"`), a value. */
void gm_expo_sample_u64(struct gm_expo_buf *b, const char *name,
                        const char *suffix, const char *labels,
                        const char *extra, uint64_t v);
void gm_expo_sample_f(struct gm_expo_buf *b, const char *name,
                      const char *suffix, const char *labels,
                      const char *extra, double v);

/* The format an Accept header asks for: OpenMetrics when it lists
 * application/openmetrics-text with a quality above that of text/plain
 * (and of any wildcard); the Prometheus format otherwise, also for a
 * missing or malformed header. */
enum gm_expo_fmt gm_expo_negotiate(const char *accept);

/* The Content-Type of a format. */
const char *gm_expo_content_type(enum gm_expo_fmt fmt);

#endif
