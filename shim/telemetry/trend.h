/*
 * shim/telemetry/trend.h — the leak verdict and the forecast from a series of
 * used-floor points (pure: no I/O, no malloc, no lock, no libm).
 *
 * Input: points oldest first, one per step (or per time bucket), each with
 * the lowest `used` over its interval (the floor), optionally the highest
 * (the peak), the live-allocation count at the floor, the time and the
 * number of steps completed. Only the most recent GM_TREND_MAX_POINTS
 * points are used (the window), so the cost is bounded whatever the caller
 * passes: O(W^2) arithmetic for W <= 128 points (about 250 us for a
 * full window on a loaded 2-core machine, a quarter of that for 64
 * points), scratch on the stack (about 3 KiB).
 *
 * The fit is Siegel's repeated median: for each point the median of the
 * slopes to every other point, then the median of those; the intercept is
 * the median of y - slope * x. It tolerates up to half the points being
 * outliers (a spike that lifts a floor) and is exact on a straight line.
 * The x axis is the step when every point in the window carries one and
 * the window spans at least min_steps steps, the time otherwise.
 *
 * Verdict (all of these for GM_TREND_GROWS; docs/metrics.md "Leak verdict"):
 *   - at least min_points points and a span of min_steps steps (or
 *     min_seconds seconds on the time axis), else GM_TREND_UNKNOWN;
 *   - growth over the window (slope * span) at least noise_factor times
 *     the noise (1.4826 * median |residual|), at least min_growth bytes,
 *     and at least min_growth_ppm of the limit when there is one;
 *   - persistence: the window cut into thirds by index, each third's own
 *     fitted slope is at least sub_ratio of the whole window's (warm-up
 *     that levels off fails in the last third);
 *   otherwise GM_TREND_STEADY.
 * Forecast (GM_TREND_GROWS and a limit only): headroom = limit - fitted
 * floor at the last point - the largest excursion (peak - floor) of the
 * window, clamped at 0; steps_to_limit = headroom / bytes_per_step,
 * seconds_to_limit = headroom / bytes_per_second. Unknown figures are NaN.
 */
#ifndef GM_TREND_H
#define GM_TREND_H

#include <stddef.h>
#include <stdint.h>

#define GM_TREND_MAX_POINTS 128

struct gm_trend_point {
    double t;        /* seconds since any fixed origin, non-decreasing */
    double step;     /* steps completed at this point; < 0 when unknown */
    uint64_t floor;  /* lowest `used` over the point's interval */
    uint64_t peak;   /* highest `used` over the interval; < floor = unknown */
    uint64_t live;   /* live allocations at the floor (0 when unknown) */
    int64_t frag_ppm; /* fragmentation at the point's end (docs/metrics.md),
                         ppm; < 0 when unknown (not used by the fit) */
};

struct gm_trend_params {
    uint32_t min_points;     /* points in the window (default 12) */
    uint32_t min_steps;      /* span on the step axis (default 10) */
    double min_seconds;      /* span on the time axis (default 10) */
    double noise_factor;     /* growth >= this * noise (default 4) */
    double sub_ratio;        /* each third's slope >= this * slope (0.5) */
    uint64_t min_growth;     /* growth over the window, bytes (1 MiB) */
    uint32_t min_growth_ppm; /* growth >= this ppm of the limit (1000) */
};

enum gm_trend_verdict {
    GM_TREND_UNKNOWN = 0, /* too few points or too short a span */
    GM_TREND_STEADY = 1,  /* judged: no persistent growth */
    GM_TREND_GROWS = 2,   /* judged: grows (the leak verdict) */
};

struct gm_trend {
    enum gm_trend_verdict verdict;
    int by_step;             /* the fit's x axis is the step */
    uint32_t points;         /* points in the window */
    double steps;            /* the window's span in steps; NaN unknown */
    double seconds;          /* the window's span in seconds */
    double bytes_per_step;   /* fitted slope; NaN when steps are unknown */
    double bytes_per_second; /* fitted slope against time */
    double noise;            /* 1.4826 * median |residual| on the x axis */
    double floor_now;        /* fitted floor at the last point, bytes */
    double step_now;         /* steps at the last point; NaN unknown */
    uint64_t excursion;      /* largest peak - floor in the window */
    uint64_t live_first;     /* live count at the window's first point */
    uint64_t live_last;      /* ... and at its last */
    double steps_to_limit;   /* forecast; NaN when unknown */
    double seconds_to_limit; /* forecast; NaN when unknown */
};

/* The defaults above. */
void gm_trend_defaults(struct gm_trend_params *p);

/* Judges the last min(n, GM_TREND_MAX_POINTS) points of pt. limit 0 means
 * none (no forecast, no relative threshold); p NULL means the defaults.
 * Fills *out completely. Returns 0, or -1 (out untouched) when pt or out
 * is NULL with n > 0 or out is NULL. */
int gm_trend_fit(const struct gm_trend_point *pt, size_t n, uint64_t limit,
                 const struct gm_trend_params *p, struct gm_trend *out);

/* Siegel repeated-median slope of y over x (n <= GM_TREND_MAX_POINTS;
 * pairs with equal x are skipped). NaN when no pair has distinct x. */
double gm_trend_slope(const double *x, const double *y, size_t n);

/* Evidence for the verdict line: the size class whose live count grew the
 * most, with its count at the window's start and end (size 0: none);
 * from UINT64_MAX when the start count is unknown, then `to` is the
 * growth ("; 120 more live allocations of 16 MiB"). */
struct gm_trend_evidence {
    uint64_t size;
    uint64_t from, to;
};

/* The verdict as one line, without a newline, e.g.
 *   device 0: grows 16.0 MiB per step (1.9 MiB/s) over the last 120 steps;
 *   live allocations of 16 MiB rose from 12 to 132; limit in about 240
 *   steps (52 s)
 *   device 0: no growth over the last 120 steps
 *   device 0: not enough history for a verdict (5 of 12 points)
 * snprintf-like: returns the full length, writes at most cap bytes with a
 * terminating NUL when cap > 0. ev may be NULL. No floating-point printf. */
size_t gm_trend_format(char *buf, size_t cap, unsigned dev,
                       const struct gm_trend *r,
                       const struct gm_trend_evidence *ev);

/* Seconds as text: "0.5 s", "52 s", "4.3 min", "2.1 h", "3.2 d";
 * snprintf-like. NaN or negative print as "?". */
size_t gm_trend_format_seconds(double s, char *buf, size_t cap);

#endif
