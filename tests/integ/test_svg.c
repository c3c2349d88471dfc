/*
 * tests/integ/test_svg.c — the image of `gpumem report --svg`, read back
 * as SVG text: each axis has at most 8 ticks, from 0, on a 1-2-5 step;
 * the unit of the memory axis's title is the unit of every size written
 * on the image; the legend has a refused-request entry exactly when an
 * OOM mark is drawn; a note says how many events were lost exactly when
 * the ring (or the trace) lost some, and the x axis still starts at the
 * process start; no usage line crosses a peak label's box.
 *
 * The images come from gpumem-trainsim under the shim on the simulated
 * driver (a run that reaches its limit; a run whose 1024-event ring
 * overwrote most of its history) and from made-up traces read with
 * `gpumem report --from` (sizes from bytes to TiB, spans from 0.4 ms to
 * an hour, two devices, lost events). The checks read the SVG the way
 * the old drawing wrote it too (tick labels by their anchor, the peak
 * label by its text), so they judge the picture, not class names.
 *
 * Each case uses its own segment prefix (GPUMEM_SHM_PREFIX) and removes
 * its segments and temporary files; what a failed case left under the
 * suite's prefixes is removed at the end. BUILD (default "build") names
 * the build directory.
 */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gm_spawn.h"
#include "tools/lib/reader.h"

#define OUT_CAP (4 << 20)

static char out[OUT_CAP];
static char svg[OUT_CAP];
static char prefix[64];
static char prefix_env[96];
static int suite_pid;            /* the runner's pid, in every prefix */

/* ---- running ------------------------------------------------------------------ */

static void new_prefix(const char *tag)
{
    static int n;
    snprintf(prefix, sizeof prefix, "gmsv%s%d_%d", tag, suite_pid, n++);
    snprintf(prefix_env, sizeof prefix_env, "GPUMEM_SHM_PREFIX=%s", prefix);
}

static void cleanup(void)
{
    int pids[64];
    int n = gm_reader_list(GM_READER_DEFAULT_DIR, prefix, pids, 64);
    for (int i = 0; i < n && i < 64; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s.%d", GM_READER_DEFAULT_DIR, prefix,
                 pids[i]);
        unlink(path);
    }
}

/* After all cases, in the runner: segments a failed case left. */
static void remove_leftovers(void)
{
    char mark[32];
    snprintf(mark, sizeof mark, "%d_", suite_pid);
    DIR *d = opendir(GM_READER_DEFAULT_DIR);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "gmsv", 4) != 0 || !strstr(e->d_name, mark))
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", GM_READER_DEFAULT_DIR,
                 e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
}

static const char *gpumem(void) { return gm_bpath("gpumem"); }

static int tool(const char *const *argv)
{
    const char *env[] = { prefix_env, NULL };
    return gm_run(env, 0, argv, out, OUT_CAP);
}

/* trainsim under the shim with a kept segment; its pid. */
static int kept_trainsim(const char *limit, const char *ring,
                         const char *const *args, int want_status)
{
    char lim[64], rin[64];
    snprintf(lim, sizeof lim, "GPUMEM_LIMIT=%s", limit);
    snprintf(rin, sizeof rin, "GPUMEM_RING_EVENTS=%s", ring);
    const char *env[] = { prefix_env, "GPUMEM_KEEP=1", lim, rin,
                          "SIMCUDA_LATENCY=20us", "GPUMEM_REPORT", NULL };
    const char *argv[12] = { gm_bpath("gpumem-trainsim") };
    for (int i = 0; args[i] && i < 10; i++)
        argv[i + 1] = args[i];
    int st = gm_run(env, 1, argv, out, OUT_CAP);
    ck_assert_msg(st == want_status, "trainsim: %d: %s", st, out);
    int pids[4];
    ck_assert_int_eq(gm_reader_list(GM_READER_DEFAULT_DIR, prefix, pids, 4),
                     1);
    return pids[0];
}

/* `gpumem report [ARGS] --svg TMP` into svg[] (TMP removed); stdout
 * stays in out[]. Its exit status. */
static int report_svg(const char *a1, const char *a2)
{
    char path[] = "/tmp/gmsv_svgXXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    const char *argv[] = { gpumem(), "report", "--svg", path, a1, a2, NULL };
    int rc = tool(argv);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(svg, 1, sizeof svg - 1, f) : 0;
    svg[n] = '\0';
    if (f)
        fclose(f);
    unlink(path);
    return rc;
}

static void check_document(int rc)
{
    ck_assert_msg(rc == 0, "report: %d: %s", rc, out);
    ck_assert(strncmp(svg, "<svg", 4) == 0);
    ck_assert_ptr_nonnull(strstr(svg, "</svg>\n"));
}

static void report_pid(int pid)
{
    char spid[16];
    snprintf(spid, sizeof spid, "%d", pid);
    check_document(report_svg(spid, NULL));
}

static uint64_t json_u64(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    ck_assert_msg(p != NULL, "no %s in %s", key, text);
    return strtoull(p + strlen(pat), NULL, 10);
}

/* ---- reading the SVG ---------------------------------------------------------- */

/* Attribute `name` of the element that starts at el, or NAN. */
static double attr(const char *el, const char *name)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s=\"", name);
    const char *end = strchr(el, '>');
    const char *p = strstr(el, pat);
    if (p == NULL || (end && p > end))
        return NAN;
    return strtod(p + strlen(pat), NULL);
}

static bool attr_is(const char *el, const char *name, const char *value)
{
    char pat[96];
    snprintf(pat, sizeof pat, " %s=\"%s\"", name, value);
    const char *end = strchr(el, '>');
    const char *p = strstr(el, pat);
    return p != NULL && (end == NULL || p < end);
}

/* The character data of the <text> element at el (no markup inside). */
static void text_of(const char *el, char *buf, size_t cap)
{
    const char *s = strchr(el, '>');
    const char *e = s ? strstr(s, "</text>") : NULL;
    size_t n = s && e ? (size_t)(e - s - 1) : 0;
    n = n < cap - 1 ? n : cap - 1;
    memcpy(buf, s ? s + 1 : "", n);
    buf[n] = '\0';
}

static bool numeric(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s; s++)
        if ((*s < '0' || *s > '9') && *s != '.')
            return false;
    return true;
}

/* Tick labels of the axes group: numbers anchored `anchor`. */
static int ticks(const char *anchor, double *v, int max)
{
    const char *g = strstr(svg, "<g class=\"axes\"");
    ck_assert_ptr_nonnull(g);
    const char *ge = strstr(g, "</g>");
    int n = 0;
    char t[64];
    for (const char *p = strstr(g, "<text"); p && p < ge;
         p = strstr(p + 1, "<text")) {
        text_of(p, t, sizeof t);
        if (attr_is(p, "text-anchor", anchor) && numeric(t) && n < max)
            v[n++] = strtod(t, NULL);
    }
    return n;
}

static bool one_two_five(double step)
{
    if (!(step > 0))
        return false;
    while (step >= 10 - 1e-9)
        step /= 10;
    while (step < 1 - 1e-9)
        step *= 10;
    return fabs(step - 1) < 1e-6 || fabs(step - 2) < 1e-6 ||
           fabs(step - 5) < 1e-6;
}

/* At most 8 ticks, from 0, evenly on a 1-2-5 step. */
static void check_axis(const char *anchor, const char *what)
{
    double v[64];
    int n = ticks(anchor, v, 64);
    ck_assert_msg(n >= 2 && n <= 8, "%s axis: %d ticks", what, n);
    ck_assert_msg(v[0] == 0, "%s axis starts at %g", what, v[0]);
    double step = v[1] - v[0];
    ck_assert_msg(one_two_five(step), "%s axis: step %g", what, step);
    for (int i = 1; i < n; i++)
        ck_assert_msg(fabs(v[i] - v[i - 1] - step) < step * 1e-6,
                      "%s axis: uneven at %g", what, v[i]);
}

static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };

/* The unit a size in text is written in ("1.0 GiB"), or NULL. */
static const char *unit_at(const char *p)
{
    for (unsigned u = 0; u < 5; u++) {
        size_t n = strlen(units[u]);
        if (strncmp(p, units[u], n) == 0 &&
            (p[n] == '\0' || p[n] == ' ' || p[n] == ')' || p[n] == ','))
            return units[u];
    }
    return NULL;
}

/* The memory axis's unit is the unit of every size on the image; at
 * least `want` sizes are there. */
static void check_units(int want)
{
    const char *title = strstr(svg, "device memory used (");
    ck_assert_ptr_nonnull(title);
    char axis[8] = "";
    sscanf(title + strlen("device memory used ("), "%7[A-Za-z]", axis);
    int seen = 0;
    char t[512];
    for (const char *p = strstr(svg, "<text"); p; p = strstr(p + 1, "<text")) {
        text_of(p, t, sizeof t);
        for (const char *q = t + 1; *q; q++) {
            const char *u = q[-1] == ' ' && q >= t + 2 && q[-2] >= '0' &&
                            q[-2] <= '9' ? unit_at(q) : NULL;
            if (u == NULL)
                continue;
            ck_assert_msg(strcmp(u, axis) == 0, "'%s' on a %s axis", t, axis);
            seen++;
        }
    }
    ck_assert_msg(seen >= want, "%d sizes on the image", seen);
}

/* An OOM entry in the legend exactly when an OOM mark is drawn. */
static void check_legend(bool oom)
{
    bool mark = strstr(svg, "class=\"oom\"") != NULL;
    bool entry = strstr(svg, "refused request (OOM)") != NULL;
    ck_assert_int_eq(mark, oom);
    ck_assert_msg(entry == mark, "OOM legend %d, OOM mark %d", entry, mark);
}

/* The text of the note on lost events, or NULL. */
static const char *lost_note(char *buf, size_t cap)
{
    for (const char *p = strstr(svg, "<text"); p; p = strstr(p + 1, "<text")) {
        text_of(p, buf, cap);
        if (strstr(buf, " lost") && strstr(buf, "events"))
            return buf;
    }
    return NULL;
}

/* ---- the peak label and the lines -------------------------------------------- */

struct rect {
    double x0, y0, x1, y1;
};

static bool meets(struct rect a, struct rect b)
{
    return a.x0 <= b.x1 && b.x0 <= a.x1 && a.y0 <= b.y1 && b.y0 <= a.y1;
}

/* Where the text at el is drawn (12 px, a character at least 6 px wide),
 * joined with the box drawn behind it, if any. */
static struct rect label_rect(const char *el, const char *start)
{
    char t[128];
    text_of(el, t, sizeof t);
    double x = attr(el, "x"), y = attr(el, "y"), w = 6.0 * strlen(t);
    struct rect r = { x, y - 11, x + w, y + 3 };
    if (attr_is(el, "text-anchor", "end"))
        r = (struct rect){ x - w, y - 11, x, y + 3 };
    const char *box = NULL;
    for (const char *p = strstr(start, "<rect"); p && p < el;
         p = strstr(p + 1, "<rect"))
        box = p;
    if (box && strstr(box, "label-box") && el - box < 400) {
        double bx = attr(box, "x"), by = attr(box, "y");
        r.x0 = fmin(r.x0, bx);
        r.y0 = fmin(r.y0, by);
        r.x1 = fmax(r.x1, bx + attr(box, "width"));
        r.y1 = fmax(r.y1, by + attr(box, "height"));
    }
    return r;
}

/* Does a polyline's point, or a segment between two of its points (by
 * its bounding box: the lines are drawn in steps), touch r? */
static bool line_touches(const char *pl, struct rect r)
{
    const char *p = strstr(pl, "points=\"");
    ck_assert_ptr_nonnull(p);
    p += strlen("points=\"");
    double px = NAN, py = NAN, x, y;
    int used;
    while (sscanf(p, " %lf,%lf%n", &x, &y, &used) == 2) {
        struct rect s = { x, y, x, y };
        if (!isnan(px))
            s = (struct rect){ fmin(px, x), fmin(py, y), fmax(px, x),
                               fmax(py, y) };
        if (meets(s, r))
            return true;
        px = x;
        py = y;
        p += used;
    }
    return false;
}

/* Every peak label lies within the image and no usage line touches it;
 * returns how many there are. */
static int check_peak_labels(void)
{
    int labels = 0;
    char t[128];
    for (const char *p = strstr(svg, "<text"); p; p = strstr(p + 1, "<text")) {
        text_of(p, t, sizeof t);
        if (strncmp(t, "peak ", 5) != 0)
            continue;
        struct rect r = label_rect(p, svg);
        ck_assert_msg(r.x0 >= 0 && r.y0 >= 0 && r.x1 <= 960 && r.y1 <= 500,
                      "'%s' outside the image", t);
        for (const char *l = strstr(svg, "<polyline"); l;
             l = strstr(l + 1, "<polyline"))
            ck_assert_msg(!line_touches(l, r), "a line crosses '%s' at "
                          "%.0f,%.0f-%.0f,%.0f", t, r.x0, r.y0, r.x1, r.y1);
        labels++;
    }
    return labels;
}

/* The plot frame: the unfilled rect of the axes group. */
static struct rect frame(void)
{
    const char *g = strstr(svg, "<g class=\"axes\"");
    ck_assert_ptr_nonnull(g);
    for (const char *p = strstr(g, "<rect"); p; p = strstr(p + 1, "<rect"))
        if (attr_is(p, "fill", "none")) {
            double x = attr(p, "x"), y = attr(p, "y");
            return (struct rect){ x, y, x + attr(p, "width"),
                                  y + attr(p, "height") };
        }
    ck_abort_msg("no plot frame");
    return (struct rect){ 0, 0, 0, 0 };
}

static double first_line_x(void)
{
    const char *p = strstr(svg, "<polyline");
    ck_assert_ptr_nonnull(p);
    p = strstr(p, "points=\"");
    double x = NAN, y;
    ck_assert_int_eq(sscanf(p + strlen("points=\""), " %lf,%lf", &x, &y), 2);
    return x;
}

/* "history before T s lost (N events)": N as given (with thousands
 * separators), and T where the line starts, on an axis from the process
 * start. */
static void check_history_note(uint64_t lost)
{
    char buf[256], want[64], digits[32];
    const char *note = lost_note(buf, sizeof buf);
    ck_assert_msg(note != NULL, "no note on %" PRIu64 " lost events", lost);
    int n = snprintf(digits, sizeof digits, "%" PRIu64, lost), o = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            want[o++] = ',';
        want[o++] = digits[i];
    }
    snprintf(want + o, sizeof want - (size_t)o, " events)");
    ck_assert_msg(strstr(note, want), "'%s' lacks '%s'", note, want);
    double t = 0, xt[16];
    ck_assert_int_eq(sscanf(note, "history before %lf s lost", &t), 1);
    int nx = ticks("middle", xt, 16);
    struct rect fr = frame();
    double at = fr.x0 + t / xt[nx - 1] * (fr.x1 - fr.x0);
    ck_assert_msg(t > 0 && fabs(at - first_line_x()) <= 4,
                  "note at %.1f px, line from %.1f px", at, first_line_x());
}

static void check_common(bool oom, int sizes)
{
    check_axis("middle", "time");
    check_axis("end", "memory");
    check_units(sizes);
    check_legend(oom);
    ck_assert_int_ge(check_peak_labels(), 1);
}

/* ---- traces ----------------------------------------------------------------- */

struct ev {
    int dev;
    double t;                    /* seconds after the start */
    uint64_t used;
    const char *kind;
};

#define T0 1700000000000000000ull

/* A trace of one process (limit per device, events), optionally with
 * `lost` events lost before them; report --from draws it. */
static void trace_svg(const uint64_t *limits, int ndev, const struct ev *ev,
                      int n, uint64_t lost)
{
    char path[] = "/tmp/gmsv_trcXXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"pid\":4242,\"kind\":\"process\",\"command\":\"made-up\","
            "\"start_realtime_ns\":%llu,\"devices\":[", (unsigned long long)T0);
    for (int d = 0; d < ndev; d++)
        fprintf(f, "%s{\"device\":%d,\"physical\":0,\"limit\":%" PRIu64 "}",
                d ? "," : "", d, limits[d]);
    fprintf(f, "]}\n");
    if (lost)
        fprintf(f, "{\"pid\":4242,\"kind\":\"lost\",\"count\":%" PRIu64 "}\n",
                lost);
    for (int i = 0; i < n; i++)
        fprintf(f, "{\"pid\":4242,\"seq\":%d,\"ts_ns\":%llu,\"kind\":\"%s\","
                "\"api\":\"cuMemAlloc\",\"dev\":%d,\"tid\":1,\"size\":1,"
                "\"addr\":0,\"used_after\":%" PRIu64 ",\"extra\":0,"
                "\"lat_ns\":0}\n", i,
                (unsigned long long)(T0 + (uint64_t)(ev[i].t * 1e9)),
                ev[i].kind ? ev[i].kind : "alloc", ev[i].dev, ev[i].used);
    fclose(f);
    int rc = report_svg("--from", path);
    unlink(path);
    check_document(rc);
}

/* A saw-tooth rising to `peak` at 0.9 of `span` seconds. */
static int sawtooth(struct ev *ev, int dev, uint64_t peak, double span)
{
    int n = 0;
    for (int i = 0; i <= 200; i++) {
        double f = i / 200.0;
        double v = (0.3 + 0.6 * f + ((i % 10) / 10.0) * 0.1) * (double)peak;
        ev[n++] = (struct ev){ dev, f * span, (uint64_t)v, NULL };
    }
    ev[180].used = peak;
    for (int i = 181; i <= 200; i++)
        if (ev[i].used >= peak)
            ev[i].used = peak - 1;
    return n;
}

/* ---- cases -------------------------------------------------------------------- */

/* The run of docs/tools.md: a leak reaches the 1 GiB limit, one refusal.
 * The old drawing: 18 time ticks, a MiB axis with GiB labels, the peak
 * label under the line. */
START_TEST(run_to_the_limit)
{
    new_prefix("lim");
    const char *args[] = { "--steps", "60", "--leak", "16M", "--quiet",
                           NULL };
    int pid = kept_trainsim("1G", "65536", args, 3);
    report_pid(pid);
    ck_assert_ptr_nonnull(strstr(out, "1 refused"));
    ck_assert_ptr_nonnull(strstr(out, " 0 events lost"));
    check_common(true, 2);
    char buf[256];
    ck_assert_ptr_null(lost_note(buf, sizeof buf));
    cleanup();
}
END_TEST

/* A 1024-event ring that overwrote most of a run: a note says how much
 * is missing; no refusal, so no OOM entry. The old drawing: no note, an
 * OOM entry. */
START_TEST(run_that_lost_history)
{
    new_prefix("lost");
    const char *args[] = { "--steps", "200", "--quiet", NULL };
    int pid = kept_trainsim("2G", "1024", args, 0);
    char spid[16];
    snprintf(spid, sizeof spid, "%d", pid);
    const char *argj[] = { gpumem(), "report", "--json", spid, NULL };
    ck_assert_int_eq(tool(argj), 0);
    uint64_t lost = json_u64(out, "events_lost");
    ck_assert_uint_eq(json_u64(out, "events_dropped"), 0);
    ck_assert_uint_gt(lost, 1024);
    report_pid(pid);
    check_common(false, 2);
    check_history_note(lost);
    cleanup();
}
END_TEST

/* Sizes from bytes to TiB and spans from 0.4 ms to an hour. */
START_TEST(scales_of_all_sizes)
{
    static const struct { uint64_t peak, limit; double span; } c[] = {
        { 700, 0, 0.0004 },
        { 5000, 8192, 0.9 },
        { 300ull << 20, 520ull << 20, 0.34 },
        { 1ull << 30, 1ull << 30, 17 },
        { 1900ull << 20, 2ull << 30, 123 },
        { 7ull << 30, 0, 2.78 },
        { 3500ull << 30, 4ull << 40, 3600 },
    };
    static struct ev ev[256];
    new_prefix("scale");
    for (unsigned i = 0; i < sizeof c / sizeof c[0]; i++) {
        int n = sawtooth(ev, 0, c[i].peak, c[i].span);
        trace_svg(&c[i].limit, 1, ev, n, 0);
        check_common(false, c[i].limit ? 2 : 1);
        char buf[256];
        ck_assert_ptr_null(lost_note(buf, sizeof buf));
    }
}
END_TEST

/* A trace that starts after 13,761 lost events, with one refusal. */
START_TEST(trace_with_lost_events)
{
    static struct ev ev[256];
    new_prefix("trl");
    uint64_t limit = 2ull << 30;
    int n = sawtooth(ev, 0, 1800ull << 20, 1.0);
    for (int i = 0; i < n; i++)
        ev[i].t += 2.78;
    ev[n++] = (struct ev){ 0, 3.9, 1700ull << 20, "oom" };
    trace_svg(&limit, 1, ev, n, 13761);
    check_common(true, 2);
    check_history_note(13761);
}
END_TEST

/* Device 1 runs just above device 0's peak: the label of device 0 goes
 * where neither line is. */
START_TEST(peak_labels_clear_of_both_devices)
{
    static struct ev ev[512];
    new_prefix("two");
    uint64_t limits[2] = { 0, 0 };
    int n = sawtooth(ev, 0, 1ull << 30, 10.0);
    for (int i = 0; i <= 100; i++)
        ev[n++] = (struct ev){ 1, i / 10.0, 1075ull << 20, NULL };
    trace_svg(limits, 2, ev, n, 0);
    check_axis("middle", "time");
    check_axis("end", "memory");
    check_units(2);
    check_legend(false);
    ck_assert_int_eq(check_peak_labels(), 2);
}
END_TEST

/* One sample: still axes from 0 and a clear label. */
START_TEST(one_sample)
{
    new_prefix("one");
    struct ev ev = { 0, 0, 4096, NULL };
    uint64_t limit = 0;
    trace_svg(&limit, 1, &ev, 1, 0);
    check_common(false, 1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("svg");
    TCase *t = tcase_create("svg");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, run_to_the_limit);
    tcase_add_test(t, run_that_lost_history);
    tcase_add_test(t, scales_of_all_sizes);
    tcase_add_test(t, trace_with_lost_events);
    tcase_add_test(t, peak_labels_clear_of_both_devices);
    tcase_add_test(t, one_sample);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    suite_pid = (int)getpid();
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    remove_leftovers();
    return failed == 0 ? 0 : 1;
}
