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

char *gm_rl_splice_json(const char *json, const struct gm_report_leaks *rl)
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
        gm_leak_json(f, dev < GM_ABI_MAX_DEVICES && rl->have[dev] ? &rl->dev[dev]
                                                                  : NULL);
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

/* ---- --every ---------------------------------------------------------------- */

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
    fprintf(f, "%10s %9s %9s %9s %9s\n", steps ? "STEP" : "POINT", "TIME",
            "FLOOR", "PEAK", "LIVE");
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < l->npts; i++) {
        const struct gm_trend_point *p = &l->pts[i];
        lo = p->floor < lo ? p->floor : lo;
        hi = p->peak > hi ? p->peak : hi;
        /* One row per group of points with the same floor(step / every)
         * (point number without steps), shown at the group's last. */
        double key = steps ? p->step : (double)(i + 1);
        if (i + 1 < l->npts) {
            double next = steps ? l->pts[i + 1].step : (double)(i + 2);
            if (floor(key / (double)every) == floor(next / (double)every))
                continue;
        }
        char fl[16], pk[16], t[24], k[24];
        gm_size_short(lo, fl, sizeof fl);
        gm_size_short(hi, pk, sizeof pk);
        gm_trend_format_seconds(p->t, t, sizeof t);
        gm_format_decimal(floor(key), 0, k, sizeof k);
        fprintf(f, "%10s %9s %9s %9s %9" PRIu64 "\n", k, t, fl, pk, p->live);
        lo = UINT64_MAX;
        hi = 0;
    }
}

void gm_rl_every(FILE *f, const struct gm_report_leaks *rl, uint64_t every)
{
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++)
        if (rl->have[i])
            every_dev(f, i, &rl->dev[i], every ? every : 1);
}
