/*
 * tools/cli/report_trend.c — the verdict lines, the "leak" objects and the
 * --every table of `gpumem report` (see tools/cli/report_trend.h).
 */
#include "tools/cli/report_trend.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/parse.h"
#include "shim/telemetry/report.h"
#include "tools/lib/svg.h"
#include "tools/lib/util.h"

void gm_rl_compute(struct gm_report_leaks *rl, const struct gm_seg *seg,
                   const struct gm_snapshot *s, const struct gm_abi_record *ev,
                   size_t n, uint64_t lost)
{
    char err[256];
    memset(rl, 0, sizeof *rl);
    for (unsigned i = 0; i < s->dev_count && i < GM_ABI_MAX_DEVICES; i++) {
        if (!gm_report_dev_used(&s->dev[i]))
            continue;
        gm_leak_of_seg(seg, s, i, ev, n, lost, &rl->dev[i], err, sizeof err);
        rl->have[i] = true;
    }
}

void gm_rl_compute_events(struct gm_report_leaks *rl,
                          const struct gm_snapshot *s,
                          const struct gm_abi_record *ev, size_t n,
                          uint64_t lost)
{
    bool marked = false;
    for (size_t i = 0; i < n && !marked; i++)
        marked = ev[i].kind == GM_EV_STEP;
    memset(rl, 0, sizeof *rl);
    for (unsigned i = 0; i < s->dev_count && i < GM_ABI_MAX_DEVICES; i++) {
        const struct gm_abi_dev *d = &s->dev[i];
        if (!gm_report_dev_used(d))
            continue;
        struct gm_leak_input in = {
            .ev = ev, .n = n, .lost = lost, .dev = i,
            .t0_ns = s->start_realtime_ns, .limit = d->limit,
            .dev_events = d->allocs + d->frees, .live_end = d->live_allocs,
            .marked = marked,
        };
        gm_leak_analyse(&in, &rl->dev[i]);
        rl->have[i] = true;
    }
}

void gm_rl_free(struct gm_report_leaks *rl)
{
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++)
        if (rl->have[i])
            gm_leak_free(&rl->dev[i]);
    memset(rl, 0, sizeof *rl);
}

void gm_rl_text(FILE *f, const struct gm_report_leaks *rl)
{
    char line[512];
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++) {
        if (!rl->have[i])
            continue;
        gm_trend_format(line, sizeof line, i, &rl->dev[i].trend, &rl->dev[i].ev);
        fprintf(f, "gpumem: %s\n", line);
    }
}

/* ---- --every ---------------------------------------------------------------- */

/* One row of the table: a group of points with the same ceil(step / every)
 * (point number without steps), at the group's last point: its step, time,
 * floor and live count, and the greatest peak of the group. */
struct every_row {
    double key;
    const struct gm_trend_point *p;
    uint64_t peak;
};

/* The next row from *i on (false at the end). */
static bool every_next(const struct gm_leak *l, uint64_t every, size_t *i,
                       struct every_row *row)
{
    bool steps = l->npts > 0 && l->pts[0].step >= 0;
    uint64_t hi = 0;
    for (; *i < l->npts; (*i)++) {
        const struct gm_trend_point *p = &l->pts[*i];
        hi = p->peak > hi ? p->peak : hi;
        double key = steps ? p->step : (double)(*i + 1);
        if (*i + 1 < l->npts) {
            double next = steps ? l->pts[*i + 1].step : (double)(*i + 2);
            if (ceil(key / (double)every) == ceil(next / (double)every))
                continue;
        }
        row->key = floor(key);
        row->p = p;
        row->peak = hi;
        (*i)++;
        return true;
    }
    return false;
}

static void every_dev(FILE *f, unsigned dev, const struct gm_leak *l,
                      uint64_t every)
{
    bool steps = l->npts > 0 && l->pts[0].step >= 0;
    fprintf(f, "gpumem: device %u: every %" PRIu64 " %s (%s, from the %s)\n", dev,
            every, steps ? "steps" : "points",
            steps ? (l->steps_from == GM_STEP_MARKED ? "steps marked"
                                                     : "steps detected")
                  : "no step known",
            l->from_history ? "history" : "ring");
    fprintf(f, "%10s %9s %9s %9s %9s %7s\n", steps ? "STEP" : "POINT", "TIME",
            "FLOOR", "PEAK", "LIVE", "FRAG");
    struct every_row r;
    size_t i = 0;
    while (every_next(l, every, &i, &r)) {
        char fl[16], pk[16], t[24], k[24];
        gm_size_short(r.p->floor, fl, sizeof fl);
        gm_size_short(r.peak, pk, sizeof pk);
        gm_trend_format_seconds(r.p->t, t, sizeof t);
        char *sp = strchr(t, ' '); /* "0.5s": one word per column */
        if (sp)
            memmove(sp, sp + 1, strlen(sp));
        gm_format_decimal(r.key, 0, k, sizeof k);
        char fr[48] = "-";
        if (r.p->frag_ppm >= 0)
            snprintf(fr, sizeof fr, "%lld.%lld%%",
                     (long long)((r.p->frag_ppm + 500) / 10000),
                     (long long)((r.p->frag_ppm + 500) / 1000 % 10));
        fprintf(f, "%10s %9s %9s %9s %9" PRIu64 " %7s\n", k, t, fl, pk,
                r.p->live, fr);
    }
}

static void every_json(FILE *f, const struct gm_leak *l, uint64_t every)
{
    struct every_row r;
    size_t i = 0;
    char k[32], t[32];
    fputs(",\"every\":[", f);
    for (bool first = true; every_next(l, every, &i, &r); first = false) {
        gm_format_decimal(r.key, 0, k, sizeof k);
        gm_format_decimal(r.p->t, 3, t, sizeof t);
        fprintf(f, "%s{\"step\":%s,\"t_s\":%s,\"floor_bytes\":%" PRIu64
                   ",\"peak_bytes\":%" PRIu64 ",\"live_allocs\":%" PRIu64,
                first ? "" : ",", k, t, r.p->floor, r.peak, r.p->live);
        if (r.p->frag_ppm >= 0)
            fprintf(f, ",\"frag_ppm\":%lld}", (long long)r.p->frag_ppm);
        else
            fputs(",\"frag_ppm\":null}", f);
    }
    fputc(']', f);
}

void gm_rl_every(FILE *f, const struct gm_report_leaks *rl, uint64_t every)
{
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++)
        if (rl->have[i])
            every_dev(f, i, &rl->dev[i], every ? every : 1);
}

/* ---- the JSON ------------------------------------------------------------- */

/* The index just past the object that starts at j ('{'), strings and
 * nesting respected; 0 when it does not end. */
static size_t object_end(const char *s, size_t j)
{
    int depth = 0;
    bool str = false;
    for (; s[j]; j++) {
        char c = s[j];
        if (str) {
            if (c == '\\' && s[j + 1])
                j++;
            else if (c == '"')
                str = false;
        } else if (c == '"') {
            str = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth == 0)
                return j + 1;
        }
    }
    return 0;
}

char *gm_rl_splice_json(const char *json, const struct gm_report_leaks *rl,
                        uint64_t every)
{
    const char *arr = strstr(json, "\"devices\":[");
    if (arr == NULL)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    size_t j = (size_t)(arr - json) + strlen("\"devices\":[");
    fwrite(json, 1, j, f);
    while (json[j] == '{' || json[j] == ',') {
        if (json[j] == ',') {
            fputc(',', f);
            j++;
            continue;
        }
        size_t end = object_end(json, j);
        unsigned dev;
        if (end == 0 || sscanf(json + j, "{\"device\":%u", &dev) != 1)
            break;
        fwrite(json + j, 1, end - 1 - j, f);
        fputc(',', f);
        const struct gm_leak *l =
            dev < GM_ABI_MAX_DEVICES && rl->have[dev] ? &rl->dev[dev] : NULL;
        gm_leak_json(f, l);
        if (every > 0 && l != NULL)
            every_json(f, l, every);
        fputc('}', f);
        j = end;
    }
    fputs(json + j, f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- the image ------------------------------------------------------------ */

static void tl_event(struct gm_timeline *tl, const struct gm_abi_record *r)
{
    if (r->dev >= GM_ABI_MAX_DEVICES || r->kind == GM_EV_HOST ||
        r->kind == GM_EV_STEP || r->kind == GM_EV_MARK)
        return;
    if (r->kind == GM_EV_OOM)
        gm_tl_oom(tl, r->dev, r->ts_ns, r->used_after);
    else
        gm_tl_add(tl, r->dev, r->ts_ns, r->used_after);
}

/* The buckets that start before `until`, each as a bar at its start from
 * its least to its greatest used, then its last used until the next; the
 * bucket in which the ring's events begin as a bar down to its least. */
static bool tl_history(struct gm_timeline *tl, const struct gm_seg *seg,
                       unsigned dev, uint64_t until)
{
    static struct gm_hist_point hp[GM_HIST_POINTS_MAX];
    char err[256];
    int n = gm_seg_history(seg, dev, hp, GM_HIST_POINTS_MAX, err, sizeof err);
    bool any = false;
    if (n <= 0 || hp[0].end_ns > until)
        return false; /* no whole bucket before the ring: the events lost
                         stay noted as lost */
    for (int i = 0; i < n && hp[i].start_ns + 2 < until; i++) {
        bool whole = hp[i].end_ns <= until;
        gm_tl_add(tl, dev, hp[i].start_ns, whole ? hp[i].used_min : hp[i].used_max);
        gm_tl_add(tl, dev, hp[i].start_ns + 1, whole ? hp[i].used_max : hp[i].used_min);
        if (whole) /* else the ring's events go on from its floor */
            gm_tl_add(tl, dev, hp[i].start_ns + 2, hp[i].used_last);
        any = true;
    }
    return any;
}

/* 1, 2, 5, 10, 20, ... at least x. */
static uint64_t nice_at_least(double x)
{
    uint64_t m = 1;
    for (;;) {
        if ((double)m >= x)
            return m;
        if ((double)(2 * m) >= x)
            return 2 * m;
        if ((double)(5 * m) >= x)
            return 5 * m;
        if (m > UINT64_MAX / 20)
            return m;
        m *= 10;
    }
}

/* Ticks at about 20 round step numbers along the first device's series. */
static void tl_steps(struct gm_timeline *tl, const struct gm_leak *l,
                     uint64_t t0_ns)
{
    if (l->npts < 2 || !(l->pts[0].step >= 0))
        return;
    double first = l->pts[0].step, last = l->pts[l->npts - 1].step;
    uint64_t k = nice_at_least((last - first) / 20);
    char lab[32];
    for (size_t i = 1; i < l->npts; i++) {
        double a = l->pts[i - 1].step, b = l->pts[i].step;
        if (floor(a / (double)k) == floor(b / (double)k))
            continue;
        uint64_t at = (uint64_t)floor(b / (double)k) * k;
        snprintf(lab, sizeof lab, "%" PRIu64, at);
        gm_tl_mark(tl, t0_ns + (uint64_t)(l->pts[i].t * 1e9), true, lab);
    }
}

static void tl_trend(struct gm_tl_trend *tt, const struct gm_leak *l,
                     uint64_t t0_ns)
{
    const struct gm_trend *t = &l->trend;
    char a[32];
    if (t->verdict != GM_TREND_GROWS || l->npts == 0 || isnan(t->bytes_per_second))
        return;
    double t1 = l->pts[l->npts - 1].t, t0 = t1 - t->seconds;
    tt->on = true;
    tt->t1_ns = t0_ns + (uint64_t)(t1 * 1e9);
    tt->t0_ns = t0_ns + (uint64_t)(t0 > 0 ? t0 * 1e9 : 0);
    tt->y1 = t->floor_now;
    tt->y0 = t->floor_now - t->bytes_per_second * t->seconds;
    if (t->by_step) {
        gm_size_short((uint64_t)(t->bytes_per_step + 0.5), a, sizeof a);
        snprintf(tt->text, sizeof tt->text, "trend +%s/st", a);
    } else {
        gm_size_short((uint64_t)(t->bytes_per_second + 0.5), a, sizeof a);
        snprintf(tt->text, sizeof tt->text, "trend +%s/s", a);
    }
}

void gm_rl_timeline(struct gm_timeline *tl, const struct gm_report_leaks *rl,
                    const struct gm_seg *seg, const struct gm_abi_record *ev,
                    size_t n, uint64_t lost)
{
    uint64_t until = n > 0 ? ev[0].ts_ns : UINT64_MAX;
    bool covered = false;
    if (lost > 0)
        for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++)
            if (rl->have[i])
                covered |= tl_history(tl, seg, i, until);
    if (covered)
        tl->hist_until_ns = until;
    else
        gm_tl_lost(tl, lost);
    for (size_t i = 0; i < n; i++)
        tl_event(tl, &ev[i]);

    static struct gm_mark_info mk[GM_ABI_MARKS];
    char err[256];
    int nm = gm_seg_marks(seg, mk, GM_ABI_MARKS, err, sizeof err);
    for (int i = 0; i < nm; i++)
        gm_tl_mark(tl, mk[i].ts_ns, false, mk[i].label);
    bool ticks = false;
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++) {
        if (!rl->have[i])
            continue;
        if (!ticks) {
            tl_steps(tl, &rl->dev[i], tl->t0_ns);
            ticks = true;
        }
        tl_trend(&tl->dev[i].trend, &rl->dev[i], tl->t0_ns);
    }
}
