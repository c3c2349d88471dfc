/*
 * shim/telemetry/forecast.h — the shim's own forecast warning: at a
 * history bucket roll (cold, at most every GM_FORECAST_EVERY_NS per
 * device), the leak verdict of shim/telemetry/trend.h over the device's
 * last closed tier-0 buckets (floor = used_min, peak = used_max); when it
 * says the device grows and the limit is forecast within the configured
 * time (GPUMEM_WARN_BEFORE), one line on stderr (written once the writer
 * lock is released) and one GM_EV_FORECAST record, once per device per
 * segment.
 *
 * Invariants: called only by the holder of the device's roll lock, so
 * per-device state has one writer; the once-flag is a process-local
 * atomic bit, reset when a segment is opened or forgotten (fork).
 */
#ifndef GM_FORECAST_H
#define GM_FORECAST_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/telemetry/abi.h"

#define GM_FORECAST_POINTS 64u            /* tier-0 buckets fitted */
#define GM_FORECAST_EVERY_NS 4000000000ull /* checks per device, at most */

/* Threshold in ns (0: no warning); silent: the record without the
 * stderr line (GPUMEM_LOG_LEVEL below warn). Clears every device's
 * once-flag. */
void gm_forecast_configure(uint64_t warn_before_ns, bool silent);
/* A context's end left device dev with nothing live (a reset) while
 * tier-0 bucket `bucket` was open, after `ops` allocations and frees of
 * the device. The fit covers the device's phase as the tools' leak
 * analysis does (docs/metrics.md): the buckets after the last reset once
 * the device allocated or freed since, else the buckets before it back
 * to the reset before. Writer lock held. */
void gm_forecast_reset(unsigned dev, uint64_t bucket, uint64_t ops);
/* The fit of device dev's last GM_FORECAST_POINTS closed tier-0 buckets
 * in the writer's segment w (the warning's own fit), for the exit report:
 * true with *r set when the verdict is GM_TREND_GROWS. */
struct gm_trend;
struct gm_tw;
bool gm_forecast_trend(const struct gm_tw *w, unsigned dev,
                       struct gm_trend *r);
/* The roll's hook: device dev (< hist_slots) just closed a bucket. */
void gm_forecast_check(const struct gm_tw *w, struct gm_abi_dev *d,
                       unsigned dev, uint64_t now) __attribute__((cold));
/* The warning's stderr line is formatted under the writer lock and
 * written after it: the formatting marks the lock (gm_tw_defer,
 * telwrite.h's TW_W_DEFER), and gm_forecast_flush, called once the lock
 * is released, writes the lines pending. */
void gm_forecast_flush(void) __attribute__((cold));
/* Whether the warning was given for dev (tests, the exit report). */
bool gm_forecast_warned(unsigned dev);

#endif
