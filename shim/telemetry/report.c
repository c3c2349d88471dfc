/*
 * shim/telemetry/report.c — the exit report as text and JSON from a telemetry
 * snapshot (see shim/telemetry/report.h; figures defined in docs/metrics.md).
 *
 * Invariants: output goes only into the caller's buffer through one
 * snprintf-like appender that keeps counting past the end, so the return
 * value is always the full length; integer arithmetic only (no rounding
 * surprises between the text and the JSON); no malloc.
 */
#include "shim/telemetry/report.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "policy/parse.h"
#include "policy/policy.h"
#include "shim/telemetry/telwrite.h"

struct out {
    char *buf;
    size_t cap;
    size_t len;
};

static void emit(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void emit(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n;
    if (o->len < o->cap)
        n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
    else
        n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

static void emit_char(struct out *o, char c)
{
    if (o->len + 1 < o->cap) {
        o->buf[o->len] = c;
        o->buf[o->len + 1] = '\0';
    }
    o->len++;
}

static size_t finish(struct out *o)
{
    if (o->cap > 0 && o->len >= o->cap)
        o->buf[o->cap - 1] = '\0';
    return o->len;
}

/* ---- figures ------------------------------------------------------------- */

uint64_t gm_hist_quantile(const uint64_t *hist, unsigned nbuckets,
                          unsigned per_mille)
{
    if (per_mille < 1)
        per_mille = 1;
    if (per_mille > 1000)
        per_mille = 1000;
    uint64_t total = 0;
    for (unsigned b = 0; b < nbuckets; b++)
        total = total + hist[b] < total ? UINT64_MAX : total + hist[b];
    if (total == 0)
        return 0;
    /* ceil(total * per_mille / 1000) without overflow. */
    uint64_t rank = total / 1000 * per_mille +
                    ((total % 1000) * per_mille + 999) / 1000;
    uint64_t cum = 0;
    unsigned b = 0;
    for (; b < nbuckets; b++) {
        cum = cum + hist[b] < cum ? UINT64_MAX : cum + hist[b];
        if (cum >= rank)
            break;
    }
    if (b >= nbuckets)
        b = nbuckets - 1;
    return b + 1 < 64 ? 1ull << (b + 1) : UINT64_MAX;
}

size_t gm_format_latency(uint64_t ns, char *buf, size_t cap)
{
    static const struct { uint64_t div; const char *unit; } u[] = {
        { 1000ull, "µs" }, { 1000000ull, "ms" }, { 1000000000ull, "s" },
    };
    int n;
    if (ns < 1000) {
        n = snprintf(buf, cap, "%llu ns", (unsigned long long)ns);
    } else {
        unsigned i = 0;
        uint64_t tenths;
        for (;; i++) { /* rounded to a tenth; 999.96 µs -> 1.0 ms */
            uint64_t d = u[i].div;
            tenths = ns / d * 10 + ((ns % d) * 10 + d / 2) / d;
            if (tenths < 10000 || i == 2)
                break;
        }
        n = snprintf(buf, cap, "%llu.%u %s",
                     (unsigned long long)(tenths / 10),
                     (unsigned)(tenths % 10), u[i].unit);
    }
    return n < 0 ? 0 : (size_t)n;
}

bool gm_report_dev_used(const struct gm_abi_dev *d)
{
    return d->present && (d->allocs || d->frees || d->refusals ||
                          d->context_bytes || d->context_peak || d->spills ||
                          d->over_limit || d->peak);
}

/* A report is of the whole run: its context figure is the most context
 * memory charged at once (contexts may have ended before the report). */
static uint64_t report_context(const struct gm_abi_dev *d)
{
    return d->context_peak > d->context_bytes ? d->context_peak
                                              : d->context_bytes;
}

/* Whole seconds and thousandths between the process start and `ns`. */
static uint64_t since_start_ms(const struct gm_snapshot *s, uint64_t ns)
{
    return ns > s->start_realtime_ns ? (ns - s->start_realtime_ns) / 1000000
                                     : 0;
}

/* ---- the OOM snapshot ------------------------------------------------------ */

size_t gm_format_size_short(uint64_t bytes, char *buf, size_t cap)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB",
                                        "PiB", "EiB" };
    unsigned u = 0;
    while (u < 6 && bytes >= (1ull << (10 * (u + 1))))
        u++;
    uint64_t whole = bytes >> (10 * u);
    uint64_t rest = u ? bytes & ((1ull << (10 * u)) - 1) : 0;
    /* Tenths, rounded; 9.96 GiB reads "10.0 GiB". */
    uint64_t tenths = u ? (rest * 10 + (1ull << (10 * u - 1))) >> (10 * u)
                        : 0;
    if (tenths == 10) {
        whole++;
        tenths = 0;
        if (whole == 1024 && u < 6) { /* 1023.96 MiB reads "1.0 GiB" */
            whole = 1;
            u++;
        }
    }
    int n = rest == 0 ? snprintf(buf, cap, "%llu %s",
                                 (unsigned long long)whole, unit[u])
                      : snprintf(buf, cap, "%llu.%llu %s",
                                 (unsigned long long)whole,
                                 (unsigned long long)tenths, unit[u]);
    return n < 0 ? 0 : (size_t)n;
}

/* "12.5 s" from nanoseconds. */
static void fmt_secs(uint64_t ns, char *buf, size_t cap)
{
    uint64_t tenths = (ns + 50000000) / 100000000;
    snprintf(buf, cap, "%llu.%llu s", (unsigned long long)(tenths / 10),
             (unsigned long long)(tenths % 10));
}

size_t gm_report_oom_line(const struct gm_abi_oom *o, uint64_t start_ns,
                          bool steps_known, char *buf, size_t cap)
{
    struct out out = { buf, cap, 0 };
    if (cap > 0)
        buf[0] = '\0';
    char req[32], used[32], t[32];
    gm_format_size_short(o->size, req, sizeof req);
    gm_format_size_short(o->used, used, sizeof used);
    if (steps_known) {
        emit(&out, "refused %s at step %llu", req,
             (unsigned long long)o->step);
    } else {
        fmt_secs(o->ts_ns > start_ns ? o->ts_ns - start_ns : 0, t, sizeof t);
        emit(&out, "refused %s at %s", req, t);
    }
    emit(&out, ": %s used", used);
    if (o->nclasses > 0) {
        const struct gm_abi_oom_class *c = &o->classes[0];
        char lo[32], hi[32];
        gm_format_size_short(c->size_min, lo, sizeof lo);
        gm_format_size_short(c->size_max, hi, sizeof hi);
        uint64_t pct = o->used ? (c->bytes >= UINT64_MAX / 100
                                      ? c->bytes / (o->used / 100 + 1)
                                      : (c->bytes * 100 + o->used / 2) /
                                            o->used)
                               : 0;
        emit(&out, ", %llu%% in %llu block%s of ", (unsigned long long)pct,
             (unsigned long long)c->count, c->count == 1 ? "" : "s");
        char *ulo = strchr(lo, ' '), *uhi = strchr(hi, ' ');
        if (c->size_min == c->size_max)
            emit(&out, "%s", lo);
        else if (ulo && uhi && strcmp(ulo, uhi) == 0)
            emit(&out, "%.*s-%s", (int)(ulo - lo), lo, hi); /* "16-24 MiB" */
        else
            emit(&out, "%s-%s", lo, hi);
        uint64_t span = o->step > c->oldest_step ? o->step - c->oldest_step
                                                 : 0;
        if (steps_known && span > 0)
            emit(&out, " allocated over the last %llu step%s",
                 (unsigned long long)span, span == 1 ? "" : "s");
        else if (steps_known)
            emit(&out, " allocated in this step");
        else if (c->oldest_ns != 0) {
            fmt_secs(o->ts_ns > c->oldest_ns ? o->ts_ns - c->oldest_ns : 0,
                     t, sizeof t);
            emit(&out, " allocated over the last %s", t);
        }
    } else if (o->flags & GM_ABI_OOMF_ARENA) {
        emit(&out, ", in the static arena's blocks");
    } else {
        emit(&out, ", no live allocation of its own");
    }
    if (o->flags & GM_ABI_OOMF_FRAG) {
        char gap[32];
        gm_format_size_short(o->largest_free, gap, sizeof gap);
        uint64_t tenths = (o->frag_ppm + 500) / 1000;
        emit(&out, "; largest free gap %s (frag %llu.%llu%%)", gap,
             (unsigned long long)(tenths / 10),
             (unsigned long long)(tenths % 10));
    }
    if (o->flags & GM_ABI_OOMF_TRUNCATED)
        emit(&out, " (allocation table walk truncated)");
    return finish(&out);
}

/* ---- text ---------------------------------------------------------------- */

static void text_device(struct out *o, const struct gm_snapshot *s,
                        unsigned i, unsigned flags)
{
    const struct gm_abi_dev *d = &s->dev[i];
    char peak[32], lim[32], ctx[32], live[32], p50[32], p99[32];
    gm_format_size(d->peak, peak, sizeof peak);
    gm_format_size(d->limit, lim, sizeof lim);
    gm_format_size(report_context(d), ctx, sizeof ctx);
    gm_format_size(d->live_bytes, live, sizeof live);

    emit(o, "gpumem: device %u: peak %s", i, peak);
    if (d->limit)
        emit(o, " of %s limit", lim);
    else
        emit(o, " (no limit)");
    if (s->mode != GM_MODE_GROW || s->on_oom != GM_OOM_FAIL)
        emit(o, " (mode %s, on_oom %s)", gm_mode_name((enum gm_mode)s->mode),
             gm_on_oom_name((enum gm_on_oom)s->on_oom));
    if (d->peak_ns) {
        uint64_t ms = since_start_ms(s, d->peak_ns);
        emit(o, " at %llu.%llu s", (unsigned long long)(ms / 1000),
             (unsigned long long)(ms % 1000 / 100));
    }
    emit(o, "; context %s; %llu allocs, %llu frees, %llu refused", ctx,
         (unsigned long long)d->allocs, (unsigned long long)d->frees,
         (unsigned long long)d->refusals);
    if (d->spills) {
        char sp[32];
        gm_format_size(d->spilled_bytes, sp, sizeof sp);
        emit(o, ", %llu spilled (%s)", (unsigned long long)d->spills, sp);
    }
    if (d->over_limit)
        emit(o, ", %llu over the limit", (unsigned long long)d->over_limit);
    emit(o, "; %llu live (%s) %s", (unsigned long long)d->live_allocs, live,
         flags & GM_REPORT_LIVE ? "now" : "at exit");
    if (d->ended_bytes) {
        char ended[32];
        gm_format_size(d->ended_bytes, ended, sizeof ended);
        emit(o, "; %s never freed (freed with its context)", ended);
    }
    uint64_t tenths = (d->frag_peak_ppm + 500) / 1000;
    emit(o, "; frag at peak %llu.%llu%%", (unsigned long long)(tenths / 10),
         (unsigned long long)(tenths % 10));
    if (d->allocs) {
        gm_format_latency(gm_hist_quantile(d->lat_hist, GM_ABI_LAT_BUCKETS,
                                           500), p50, sizeof p50);
        gm_format_latency(gm_hist_quantile(d->lat_hist, GM_ABI_LAT_BUCKETS,
                                           990), p99, sizeof p99);
        emit(o, "; alloc latency p50 %s p99 %s", p50, p99);
    } else {
        emit(o, "; alloc latency n/a");
    }
    uint64_t lost = gm_snapshot_events_lost(s);
    emit(o, "; %llu event%s lost", (unsigned long long)lost,
         lost == 1 ? "" : "s");
    if (s->dev_state[i] != GM_SNAP_OK)
        emit(o, " (inconsistent snapshot)");
    emit_char(o, '\n');
    if (i < GM_ABI_HIST_DEVICES && s->oom[i].state == GM_ABI_OOM_DONE) {
        char line[512];
        gm_report_oom_line(&s->oom[i], s->start_realtime_ns, s->steps > 0,
                           line, sizeof line);
        emit(o, "gpumem: device %u: %s\n", i, line);
    }
}

size_t gm_report_text(const struct gm_snapshot *s, unsigned flags, char *buf,
                      size_t cap)
{
    struct out o = { buf, cap, 0 };
    if (cap > 0)
        buf[0] = '\0';
    unsigned shown = 0;
    for (unsigned i = 0; i < s->dev_count && i < GM_ABI_MAX_DEVICES; i++) {
        if (!gm_report_dev_used(&s->dev[i]))
            continue;
        text_device(&o, s, i, flags);
        shown++;
    }
    if (shown == 0)
        emit(&o, "gpumem: no device memory was used\n");
    return finish(&o);
}

/* ---- JSON ---------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (1..4), 0 if invalid. */
static size_t utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
             : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || (n == 2 && c < 0xc2) || (n == 4 && c > 0xf4))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if (n == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f)))
        return 0;
    if (n == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f)))
        return 0;
    return n;
}

static void json_string(struct out *o, const char *str)
{
    const unsigned char *p = (const unsigned char *)str;
    emit_char(o, '"');
    while (*p) {
        size_t n = utf8_len(p);
        if (n == 0) {
            emit(o, "\\ufffd");
            p++;
        } else if (*p == '"' || *p == '\\') {
            emit_char(o, '\\');
            emit_char(o, (char)*p++);
        } else if (*p < 0x20 || *p == 0x7f) {
            emit(o, "\\u%04x", *p++);
        } else {
            for (size_t i = 0; i < n; i++)
                emit_char(o, (char)*p++);
        }
    }
    emit_char(o, '"');
}

static void json_u64(struct out *o, const char *key, uint64_t v, bool comma)
{
    emit(o, "\"%s\":%llu%s", key, (unsigned long long)v, comma ? "," : "");
}

/* Seconds with millisecond precision, "12.345". */
static void json_secs(struct out *o, const char *key, uint64_t ns, bool comma)
{
    uint64_t ms = ns / 1000000;
    emit(o, "\"%s\":%llu.%03llu%s", key, (unsigned long long)(ms / 1000),
         (unsigned long long)(ms % 1000), comma ? "," : "");
}

static void json_oom(struct out *o, const struct gm_abi_oom *m)
{
    emit(o, "{");
    json_u64(o, "ts_ns", m->ts_ns, true);
    json_u64(o, "size", m->size, true);
    char ab[GM_ABI_NAME_CAP];
    emit(o, "\"api\":");
    json_string(o, gm_api_text(m->api, ab, sizeof ab));
    emit_char(o, ',');
    json_u64(o, "used", m->used, true);
    json_u64(o, "limit", m->limit, true);
    json_u64(o, "step", m->step, true);
    json_u64(o, "live_allocs", m->live_allocs, true);
    json_u64(o, "live_bytes", m->live_bytes, true);
    if (m->flags & GM_ABI_OOMF_FRAG) {
        json_u64(o, "largest_free", m->largest_free, true);
        json_u64(o, "frag_ppm", m->frag_ppm, true);
    } else {
        emit(o, "\"largest_free\":null,\"frag_ppm\":null,");
    }
    json_u64(o, "other_count", m->other_count, true);
    json_u64(o, "other_bytes", m->other_bytes, true);
    emit(o, "\"truncated\":%s,\"arena\":%s,\"classes\":[",
         m->flags & GM_ABI_OOMF_TRUNCATED ? "true" : "false",
         m->flags & GM_ABI_OOMF_ARENA ? "true" : "false");
    for (uint32_t k = 0; k < m->nclasses && k < GM_ABI_OOM_CLASSES; k++) {
        const struct gm_abi_oom_class *c = &m->classes[k];
        emit(o, "%s{\"api\":", k ? "," : "");
        json_string(o, gm_api_text(c->api, ab, sizeof ab));
        emit_char(o, ',');
        json_u64(o, "size_min", c->size_min, true);
        json_u64(o, "size_max", c->size_max, true);
        json_u64(o, "count", c->count, true);
        json_u64(o, "bytes", c->bytes, true);
        json_u64(o, "oldest_step", c->oldest_step, true);
        json_u64(o, "newest_step", c->newest_step, true);
        if (c->oldest_ns != 0 && m->ts_ns >= c->newest_ns &&
            c->newest_ns >= c->oldest_ns) {
            json_secs(o, "age_oldest_s", m->ts_ns - c->oldest_ns, true);
            json_secs(o, "age_newest_s", m->ts_ns - c->newest_ns, false);
        } else {
            emit(o, "\"age_oldest_s\":null,\"age_newest_s\":null");
        }
        emit_char(o, '}');
    }
    emit(o, "]}");
}

static void json_device(struct out *o, const struct gm_snapshot *s,
                        unsigned i)
{
    const struct gm_abi_dev *d = &s->dev[i];
    emit(o, "{\"device\":%u,\"consistent\":%s,", i,
         s->dev_state[i] == GM_SNAP_OK ? "true" : "false");
    json_u64(o, "physical_bytes", d->physical, true);
    if (d->limit != 0)
        json_u64(o, "limit_bytes", d->limit, true);
    else
        emit(o, "\"limit_bytes\":null,");   /* no limit: as gpumem ps */
    json_u64(o, "used_bytes", d->used, true);
    json_u64(o, "peak_bytes", d->peak, true);
    if (d->peak_ns) {
        uint64_t ms = since_start_ms(s, d->peak_ns);
        emit(o, "\"peak_at_s\":%llu.%03llu,", (unsigned long long)(ms / 1000),
             (unsigned long long)(ms % 1000));
    } else {
        emit(o, "\"peak_at_s\":null,");
    }
    json_u64(o, "context_bytes", d->context_bytes, true);
    json_u64(o, "context_peak_bytes", report_context(d), true);
    json_u64(o, "pool_reserve_bytes", d->pool_reserve, true);
    json_u64(o, "allocs", d->allocs, true);
    json_u64(o, "frees", d->frees, true);
    json_u64(o, "refused", d->refusals, true);
    json_u64(o, "spills", d->spills, true);
    json_u64(o, "spilled_bytes", d->spilled_bytes, true);
    json_u64(o, "over_limit", d->over_limit, true);
    json_u64(o, "total_allocated_bytes", d->total_bytes, true);
    json_u64(o, "live_allocs", d->live_allocs, true);
    json_u64(o, "live_bytes", d->live_bytes, true);
    json_u64(o, "context_freed_bytes", d->ended_bytes, true);
    json_u64(o, "frag_ppm", d->frag_ppm, true);
    json_u64(o, "frag_at_peak_ppm", d->frag_peak_ppm, true);
    json_u64(o, "alloc_latency_p50_ns",
             gm_hist_quantile(d->lat_hist, GM_ABI_LAT_BUCKETS, 500), true);
    json_u64(o, "alloc_latency_p99_ns",
             gm_hist_quantile(d->lat_hist, GM_ABI_LAT_BUCKETS, 990), true);
    json_u64(o, "alloc_latency_mean_ns",
             d->allocs ? d->lat_sum_ns / d->allocs : 0, true);
    emit(o, "\"oom\":");
    if (i < GM_ABI_HIST_DEVICES && s->oom[i].state == GM_ABI_OOM_DONE)
        json_oom(o, &s->oom[i]);
    else
        emit(o, "null");
    emit_char(o, '}');
}

size_t gm_report_json(const struct gm_snapshot *s, unsigned flags, char *buf,
                      size_t cap)
{
    struct out o = { buf, cap, 0 };
    if (cap > 0)
        buf[0] = '\0';
    emit(&o, "{\"pid\":%u,\"command\":", s->pid);
    json_string(&o, s->cmdline);
    emit(&o, ",\"policy\":");
    json_string(&o, s->policy);
    emit(&o, ",\"mode\":");
    json_string(&o, gm_mode_name((enum gm_mode)s->mode));
    emit(&o, ",\"on_oom\":");
    json_string(&o, gm_on_oom_name((enum gm_on_oom)s->on_oom));
    emit(&o, ",\"state\":\"%s\",", flags & GM_REPORT_LIVE ? "live" : "exit");
    json_u64(&o, "start_realtime_ns", s->start_realtime_ns, true);
    json_u64(&o, "host_pinned_bytes", s->host_pinned, true);
    json_u64(&o, "events_written", s->ring_head, true);
    json_u64(&o, "events_dropped", s->ring_dropped, true);
    json_u64(&o, "events_lost", gm_snapshot_events_lost(s), true);
    json_u64(&o, "steps", s->steps, true);
    json_u64(&o, "marks", s->marks, true);
    emit(&o, "\"devices\":[");
    unsigned shown = 0;
    for (unsigned i = 0; i < s->dev_count && i < GM_ABI_MAX_DEVICES; i++) {
        if (!gm_report_dev_used(&s->dev[i]))
            continue;
        if (shown++)
            emit_char(&o, ',');
        json_device(&o, s, i);
    }
    emit(&o, "]}\n");
    return finish(&o);
}

/* ---- the shim's exit report ---------------------------------------------- */

size_t gm_report_from_segment(const struct gm_tel *t, bool json, char *buf,
                              size_t cap)
{
    /* The layout as this process laid it out (t->w), not as the shared
     * header may say now. */
    const struct gm_abi_header *hdr = t != NULL ? tw_tel_hdr(t) : NULL;
    uint32_t slots = t != NULL ? t->w.dev_slots : 0;
    uint32_t ring = t != NULL ? (uint32_t)(t->w.ring_mask + 1) : 0;
    static struct gm_snapshot snap; /* 66 KiB: not on a thread's stack */
    static int busy;
    if (cap > 0)
        buf[0] = '\0';
    if (hdr == NULL || __atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE))
        return 0;
    gm_tel_read(hdr, slots, ring, &snap);
    gm_tel_read_oom(hdr, slots, ring, &snap);
    size_t n = json ? gm_report_json(&snap, 0, buf, cap)
                    : gm_report_text(&snap, 0, buf, cap);
    __atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
    return n;
}
