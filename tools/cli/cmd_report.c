/*
 * tools/cli/cmd_report.c — `gpumem report [PID | --from TRACE.jsonl] [--json]
 * [--svg FILE] [--every N] [--prefix P]`: the exit-report figures
 * (shim/telemetry/report.h) of a live or kept process, or of a trace written
 * by `gpumem log --format jsonl`, with a process's leak verdict and --every
 * table (tools/cli/report_trend.h); optionally the usage-over-time image
 * (tools/lib/svg.h).
 *
 * Invariants: a segment's figures come from one consistent snapshot and
 * are formatted by the shim's own report code, so `gpumem report` and the
 * exit report agree. A trace is turned into the same struct gm_snapshot
 * the segment would hold (counts, sizes and latency histograms, used,
 * peak, live allocations at the end); fragmentation is not in a trace and
 * reads 0. A trace line that is not one of ours is skipped, never trusted;
 * a recording (gpumem record's magic) is named as one and not read.
 * The SVG title carries the command line in its terminal form
 * (tools/lib/escape.h); its timeline is told every event lost (counted
 * by the drain, or a trace's "lost" line) where it falls in the order.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/parse.h"
#include "policy/policy.h"
#include "shim/record/recfmt.h"
#include "tools/cli/gpumem.h"
#include "tools/cli/report_trend.h"
#include "tools/lib/escape.h"
#include "tools/lib/svg.h"
#include "tools/lib/util.h"

const char gm_help_report[] =
    "NAME\n"
    "    gpumem report - memory figures of a process or of a recorded trace\n"
    "\n"
    "SYNOPSIS\n"
    "    gpumem report [PID] [--json] [--svg FILE] [--every N] [--prefix P]\n"
    "    gpumem report --from TRACE.jsonl [PID] [--json] [--svg FILE]\n"
    "\n"
    "DESCRIPTION\n"
    "    Prints the figures of the exit report (GPUMEM_REPORT) for a\n"
    "    running process or one kept after exit (GPUMEM_KEEP=1): per\n"
    "    device the peak and when it was reached, the limit, context\n"
    "    memory, allocations, frees and refused requests, the allocations\n"
    "    still live (a leak check at exit), fragmentation at the peak,\n"
    "    allocation latency p50/p99 and events lost. Without PID, the only\n"
    "    process of the current user is reported.\n"
    "\n"
    "    One more line per device gives the leak verdict:\n"
    "    whether the floor of used (its lowest value in each training step)\n"
    "    grows, by how much per step and per second, over how many steps,\n"
    "    the size of the allocations that pile up, and when the limit will\n"
    "    be reached at that pace. Steps are the program's own marks\n"
    "    (gpumem_step) or else found from the period of its allocations;\n"
    "    docs/metrics.md defines every figure.\n"
    "\n"
    "    With --from, the figures are computed from a trace written by\n"
    "    gpumem log --format jsonl: counts, sizes, latencies, used, peak and\n"
    "    allocations live at the end of the trace (fragmentation is not in\n"
    "    a trace and reads 0; events lost before the trace started are not\n"
    "    counted). PID picks one process of a trace holding several. The\n"
    "    leak verdict and --every come from the trace's events as they\n"
    "    would from a ring holding them all.\n"
    "\n"
    "OPTIONS\n"
    "    --json\n"
    "        One JSON object (the keys of GPUMEM_REPORT=json, see\n"
    "        docs/metrics.md) instead of text lines; for a process each\n"
    "        device also carries \"leak\": {verdict, bytes_per_step,\n"
    "        bytes_per_second, steps, seconds_to_limit, ...}, null where\n"
    "        unknown.\n"
    "    --every N\n"
    "        Also print, per device, one row every N steps (or history\n"
    "        points when no step is known): the step, its time, the used\n"
    "        floor of that step, the highest used since the previous row and\n"
    "        the live allocations. With --json, each device gets these\n"
    "        rows as \"every\": [{step, t_s, floor_bytes, peak_bytes,\n"
    "        live_allocs}, ...].\n"
    "    --svg FILE\n"
    "        Also draw device memory used over time, per device, with the\n"
    "        limit (dashed), the peak (circle) and refused requests (red\n"
    "        crosses), into FILE as SVG. For a process, the samples are the\n"
    "        events its ring still holds, and before its oldest one the\n"
    "        segment's history (1 s buckets and coarser); the image also\n"
    "        shows the marks, step ticks and the fitted trend of a growing\n"
    "        device. Without history, a note says how many events were lost\n"
    "        and since when the curve is complete.\n"
    "    --from TRACE.jsonl\n"
    "        Read a trace written by gpumem log --format jsonl instead of\n"
    "        a segment ('-': stdin). A recording of gpumem record is not\n"
    "        one: gpumem replay FILE gives its figures, gpumem log --from\n"
    "        FILE its calls.\n"
    "    --prefix P\n"
    "        Read segments named P.<pid> (default: $GPUMEM_SHM_PREFIX, else\n"
    "        gpumem), in $GPUMEM_SHM_DIR (default /dev/shm). A PID is one\n"
    "        of this pid namespace: a container's process by its host pid.\n"
    "    -h, --help\n"
    "        Print this manual page and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   Success.\n"
    "    1   No such segment or trace, or FILE could not be written.\n"
    "    2   Usage error (unknown option, no PID and not exactly one\n"
    "        process, a trace holding several processes and no PID).\n"
    "\n"
    "EXAMPLES\n"
    "    gpumem report 41017\n"
    "        gpumem: device 0: peak 544.0 MiB of 2.0 GiB limit at 0.4 s; ...\n"
    "    gpumem report --json --svg usage.svg 41017\n"
    "    gpumem report --every 500 41017\n"
    "    gpumem log --format jsonl 41017 > t.jsonl; gpumem report --from "
    "t.jsonl\n";

struct report_args {
    bool json;
    uint64_t every;              /* --every N (0: no table) */
    const char *svg;
    const char *from;
    const char *prefix;
    int pid;                     /* 0: not given */
};

/* ---- output ------------------------------------------------------------------ */

static int print_report(const struct gm_snapshot *s, unsigned flags,
                        bool json, const struct gm_report_leaks *rl,
                        uint64_t every)
{
    size_t n = json ? gm_report_json(s, flags, NULL, 0)
                    : gm_report_text(s, flags, NULL, 0);
    char *buf = malloc(n + 1);
    if (buf == NULL) {
        fprintf(stderr, "gpumem: report: out of memory\n");
        return 1;
    }
    if (json)
        gm_report_json(s, flags, buf, n + 1);
    else
        gm_report_text(s, flags, buf, n + 1);
    char *spliced = json && rl ? gm_rl_splice_json(buf, rl, every) : NULL;
    if (spliced)
        fputs(spliced, stdout);
    else
        fwrite(buf, 1, n, stdout);
    free(spliced);
    free(buf);
    if (!json && rl) {
        gm_rl_text(stdout, rl);
        if (every)
            gm_rl_every(stdout, rl, every);
    }
    return 0;
}

static int write_svg(const struct gm_timeline *tl, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "gpumem: report: cannot write %s: %s\n", path,
                strerror(errno));
        return 1;
    }
    int r = gm_svg_write(tl, f);
    if (fclose(f) != 0 || r != 0) {
        fprintf(stderr, "gpumem: report: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

/* The command line in its terminal form (whole units, at most 160
 * bytes), so that the SVG text is valid UTF-8 and shows what ps shows. */
static void tl_title(struct gm_timeline *tl, const struct gm_snapshot *s)
{
    char cmd[161];
    gm_esc_term(s->cmdline, 0, cmd, sizeof cmd);
    snprintf(tl->title, sizeof tl->title, "pid %u: %s", s->pid, cmd);
}

/* Limits and exact peaks from the snapshot override what samples show. */
static void tl_from_snapshot(struct gm_timeline *tl,
                             const struct gm_snapshot *s)
{
    tl->t0_ns = s->start_realtime_ns;
    for (unsigned i = 0; i < s->dev_count && i < GM_ABI_MAX_DEVICES; i++) {
        const struct gm_abi_dev *d = &s->dev[i];
        if (!gm_report_dev_used(d))
            continue;
        tl->dev[i].present = true;
        tl->dev[i].limit = d->limit;
        if (d->peak >= tl->dev[i].peak && d->peak_ns) {
            tl->dev[i].peak = d->peak;
            tl->dev[i].peak_ns = d->peak_ns;
        }
    }
}

static int only_pid(const char *prefix, struct gm_seg_id *id)
{
    struct gm_scan sc;
    if (gm_scan(prefix, 0, &sc) < 0)
        return 1;
    size_t n = sc.n;
    if (n == 1)
        *id = (struct gm_seg_id){ sc.procs[0].p.pid, sc.procs[0].p.pidns };
    gm_scan_free(&sc);
    if (n == 1)
        return 0;
    fprintf(stderr, "gpumem: report: %s; name a PID (gpumem ps lists them)"
            "\n", n == 0 ? "no process found" : "several processes found");
    return GM_EXIT_USAGE;
}

static int report_pid(const struct report_args *a)
{
    static struct gm_proc p;
    struct gm_seg seg;
    char err[256];
    int pid = a->pid, rc;
    struct gm_seg_id id = { 0, 0 };
    if (pid == 0 && (rc = only_pid(a->prefix, &id)) != 0)
        return rc;
    if (pid == 0)
        pid = id.pid;
    /* A PID named is one of this pid namespace (a container's process:
     * its host pid); the only process found is opened by its name. */
    if ((a->pid != 0 ? gm_seg_open_pid(&seg, gm_tool_shm_dir(), a->prefix,
                                       pid, err, sizeof err)
                     : gm_seg_open_id(&seg, gm_tool_shm_dir(), a->prefix,
                                      &id, err, sizeof err)) != 0) {
        gm_cli_open_failed("report", a->prefix, pid, err);
        return 1;
    }
    if (gm_seg_summary(&seg, &p) < 0) {
        gm_seg_close(&seg);
        fprintf(stderr, "gpumem: report: pid %d: segment unreadable\n", pid);
        return 1;
    }
    static struct gm_report_leaks rl;
    struct gm_abi_record *ev = NULL;
    size_t nev = 0;
    uint64_t lost = 0;
    if (gm_leak_drain_all(&seg, &ev, &nev, &lost) != 0) {
        gm_seg_close(&seg);
        fprintf(stderr, "gpumem: report: pid %d: cannot read the events\n", pid);
        return 1;
    }
    gm_rl_compute(&rl, &seg, &p.snap, ev, nev, lost);
    rc = print_report(&p.snap, p.state == GM_SEG_ALIVE ? GM_REPORT_LIVE : 0,
                      a->json, &rl, a->every);
    if (rc == 0 && a->svg) {
        static struct gm_timeline tl;
        gm_tl_init(&tl);
        tl.t0_ns = p.snap.start_realtime_ns;
        gm_rl_timeline(&tl, &rl, &seg, ev, nev, lost);
        tl_from_snapshot(&tl, &p.snap);
        tl_title(&tl, &p.snap);
        rc = write_svg(&tl, a->svg);
        gm_tl_free(&tl);
    }
    free(ev);
    gm_rl_free(&rl);
    gm_seg_close(&seg);
    return rc;
}

/* ---- a trace ------------------------------------------------------------------- */

/* The text right after "key": in a line of ours, or NULL. */
static const char *jfield(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    return p ? p + strlen(pat) : NULL;
}

static bool ju64(const char *line, const char *key, uint64_t *v)
{
    const char *p = jfield(line, key);
    if (p == NULL || *p < '0' || *p > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(p, &end, 10);
    if (errno != 0)
        return false;
    *v = (uint64_t)x;
    return true;
}

/* A JSON string value (escapes resolved for \" \\ \n \t only). */
static bool jstr(const char *line, const char *key, char *out, size_t cap)
{
    const char *p = jfield(line, key);
    size_t n = 0;
    if (p == NULL || *p != '"' || cap == 0)
        return false;
    for (p++; *p && *p != '"'; p++) {
        char c = *p;
        if (c == '\\' && p[1]) {
            c = *++p;
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        }
        if (n + 1 < cap)
            out[n++] = c;
    }
    out[n] = '\0';
    return *p == '"';
}

static unsigned enum_of(const char *name, const char *(*fn)(int), int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(fn(i), name) == 0)
            return (unsigned)i;
    return 0;
}

static const char *mode_name_i(int i) { return gm_mode_name((enum gm_mode)i); }
static const char *oom_name_i(int i)
{
    return gm_on_oom_name((enum gm_on_oom)i);
}

static void trace_process(const char *line, struct gm_snapshot *s)
{
    char buf[GM_ABI_POLICY_LEN];
    uint64_t v;
    jstr(line, "command", s->cmdline, sizeof s->cmdline);
    jstr(line, "policy", s->policy, sizeof s->policy);
    if (jstr(line, "mode", buf, sizeof buf))
        s->mode = enum_of(buf, mode_name_i, 3);
    if (jstr(line, "on_oom", buf, sizeof buf))
        s->on_oom = enum_of(buf, oom_name_i, 4);
    if (ju64(line, "start_realtime_ns", &v))
        s->start_realtime_ns = v;
    /* "devices":[{"device":N,"physical":P,"limit":L},...] */
    const char *p = jfield(line, "devices");
    while (p && (p = strstr(p, "{\"device\":")) != NULL) {
        uint64_t dev, phys = 0, lim = 0;
        if (ju64(p, "device", &dev) && dev < GM_ABI_MAX_DEVICES) {
            ju64(p, "physical", &phys);
            ju64(p, "limit", &lim);
            s->dev[dev].physical = phys;
            s->dev[dev].limit = lim;
        }
        p++;
    }
}

static unsigned bucket(uint64_t v, unsigned n)
{
    unsigned b = v ? 63u - (unsigned)__builtin_clzll(v) : 0u;
    return b < n ? b : n - 1;
}

static void sub_clamp(uint64_t *f, uint64_t v)
{
    *f = *f > v ? *f - v : 0;
}

/* The trace's device events as ring records, for the leak analysis. */
static struct {
    struct gm_abi_record *v;
    size_t n, cap;
    bool failed;                 /* out of memory: no analysis */
} trace_recs;

static void trace_keep(unsigned kind, unsigned dev, uint64_t ts,
                       uint64_t size, uint64_t addr, uint64_t used)
{
    if (trace_recs.failed)
        return;
    if (trace_recs.n == trace_recs.cap) {
        size_t nc = trace_recs.cap ? trace_recs.cap * 2 : 4096;
        void *p = realloc(trace_recs.v, nc * sizeof *trace_recs.v);
        if (p == NULL) {
            trace_recs.failed = true;
            return;
        }
        trace_recs.v = p;
        trace_recs.cap = nc;
    }
    struct gm_abi_record *r = &trace_recs.v[trace_recs.n++];
    memset(r, 0, sizeof *r);
    r->ts_ns = ts;
    r->kind = (uint16_t)kind;
    r->dev = dev;
    r->size = size;
    r->addr = addr; /* the leak analysis reads a CTX_FREED's count */
    r->used_after = used;
}

/* Apply one event to its device block, as the writer would have. */
static void trace_event(struct gm_snapshot *s, unsigned kind, unsigned dev,
                        uint64_t ts, uint64_t size, uint64_t used,
                        uint64_t addr, uint64_t lat, struct gm_timeline *tl)
{
    trace_keep(kind, dev, ts, size, addr, used);
    if (kind == GM_EV_STEP || kind == GM_EV_MARK || kind == GM_EV_FORECAST)
        return; /* no figure of the block: used stays as it was */
    struct gm_abi_dev *d = &s->dev[dev];
    d->present = 1;
    if (dev + 1 > s->dev_count)
        s->dev_count = dev + 1;
    switch (kind) {
    case GM_EV_ALLOC:
        d->allocs++;
        d->total_bytes += size;
        d->live_allocs++;
        d->live_bytes += size;
        d->size_hist[bucket(size, GM_ABI_SIZE_BUCKETS)]++;
        d->lat_hist[bucket(lat, GM_ABI_LAT_BUCKETS)]++;
        d->lat_sum_ns += lat;
        break;
    case GM_EV_FREE:
        d->frees++;
        sub_clamp(&d->live_allocs, 1);
        sub_clamp(&d->live_bytes, size);
        break;
    case GM_EV_CTX_FREED: /* addr of them, size bytes, with their context */
        sub_clamp(&d->live_allocs, addr);
        sub_clamp(&d->live_bytes, size);
        d->ended_bytes = size > UINT64_MAX - d->ended_bytes
                             ? UINT64_MAX : d->ended_bytes + size;
        break;
    case GM_EV_OOM: d->refusals++; break;
    case GM_EV_CONTEXT:
        d->context_bytes += size;
        if (d->context_bytes > d->context_peak)
            d->context_peak = d->context_bytes;
        break;
    case GM_EV_CONTEXT_END: sub_clamp(&d->context_bytes, size); break;
    case GM_EV_SPILL: d->spills++; d->spilled_bytes += size; break;
    case GM_EV_OVER_LIMIT: d->over_limit++; break;
    case GM_EV_WAIT_BEGIN: d->waits++; break;
    case GM_EV_TRIM: d->trims++; d->trimmed_bytes += size; break;
    case GM_EV_RECLAIM: d->reclaims++; d->reclaimed_bytes += size; break;
    case GM_EV_LIMIT: d->limit = size; break;
    default: break;
    }
    d->used = used;
    if (used > d->peak || d->peak_ns == 0) {
        d->peak = used > d->peak ? used : d->peak;
        d->peak_ns = ts;
    }
    d->last_ns = ts;
    if (tl != NULL) {
        if (kind == GM_EV_OOM)
            gm_tl_oom(tl, dev, ts, used);
        else
            gm_tl_add(tl, dev, ts, used);
    }
}

static unsigned kind_of(const char *name)
{
    for (unsigned k = 1; k < GM_EV_COUNT; k++)
        if (strcmp(gm_ev_kind_name(k), name) == 0)
            return k;
    return GM_EV_NONE;
}

/* One trace line; returns its pid (0 when not a line of ours). */
static int trace_line(const char *line, int want, struct gm_snapshot *s,
                      struct gm_timeline *tl)
{
    uint64_t pid, dev, ts = 0, size = 0, addr = 0, used = 0, lat = 0, n;
    char kind[32];
    if (!ju64(line, "pid", &pid) || pid == 0 || pid > 0x7fffffff ||
        !jstr(line, "kind", kind, sizeof kind))
        return 0;
    if (want != 0 && (int)pid != want)
        return (int)pid;
    s->pid = (uint32_t)pid;
    if (strcmp(kind, "process") == 0) {
        trace_process(line, s);
    } else if (strcmp(kind, "lost") == 0) {
        if (ju64(line, "count", &n)) {
            s->ring_dropped += n;
            s->ring_head += n;
            if (tl != NULL)
                gm_tl_lost(tl, n);
        }
    } else {
        unsigned k = kind_of(kind);
        s->ring_head++;
        if (k == GM_EV_HOST) {
            if (ju64(line, "used_after", &used))
                s->host_pinned = used;
        } else if (k != GM_EV_NONE && ju64(line, "dev", &dev) &&
                   dev < GM_ABI_MAX_DEVICES) {
            ju64(line, "ts_ns", &ts);
            ju64(line, "size", &size);
            ju64(line, "used_after", &used);
            ju64(line, "lat_ns", &lat);
            ju64(line, "addr", &addr);
            trace_event(s, k, (unsigned)dev, ts, size, used, addr, lat, tl);
        }
    }
    return (int)pid;
}

/* True when a file's first line starts as a recording does (its magic). */
static bool is_recording(const char *line, ssize_t n)
{
    uint64_t magic = GM_REC_MAGIC;
    return n >= (ssize_t)sizeof magic && memcmp(line, &magic, sizeof magic) == 0;
}

static int read_trace(FILE *f, int *want, struct gm_snapshot *s,
                      struct gm_timeline *tl, bool *recording)
{
    char *line = NULL;
    size_t cap = 0;
    int others = 0, first = *want;
    ssize_t n = getline(&line, &cap, f);
    *recording = is_recording(line, n);
    for (; n > 0 && !*recording; n = getline(&line, &cap, f)) {
        int pid = trace_line(line, first, s, tl);
        if (pid == 0)
            continue;
        if (first == 0)
            first = pid;
        else if (pid != first)
            others++;
    }
    free(line);
    if (others && *want == 0) {
        fprintf(stderr, "gpumem: report: the trace holds several processes; "
                "name one PID\n");
        return GM_EXIT_USAGE;
    }
    *want = first;
    return 0;
}

static int report_trace(const struct report_args *a)
{
    static struct gm_snapshot s;
    static struct gm_timeline tl;
    bool in = strcmp(a->from, "-") == 0;
    FILE *f = in ? stdin : fopen(a->from, "r");
    if (f == NULL) {
        fprintf(stderr, "gpumem: report: cannot read %s: %s\n", a->from,
                strerror(errno));
        return 1;
    }
    memset(&s, 0, sizeof s);
    s.ring_capacity = UINT64_MAX;
    s.dev_slots = GM_ABI_MAX_DEVICES;
    gm_tl_init(&tl);
    int pid = a->pid;
    bool recording = false;
    int rc = read_trace(f, &pid, &s, a->svg ? &tl : NULL, &recording);
    if (!in)
        fclose(f);
    if (recording) {
        fprintf(stderr, "gpumem: report: %s is a recording (gpumem record), "
                "not a trace; gpumem replay %s gives its figures under a "
                "policy, gpumem log --from %s its calls\n", a->from, a->from,
                a->from);
        rc = 1;
    } else if (rc == 0 && pid == 0) {
        fprintf(stderr, "gpumem: report: %s holds no gpumem events; --from "
                "takes a trace of gpumem log --format jsonl (gpumem log "
                "--format jsonl PID > FILE)\n", a->from);
        rc = 1;
    }
    static struct gm_report_leaks rl;
    bool have_rl = rc == 0 && pid != 0 && !trace_recs.failed;
    if (have_rl)
        gm_rl_compute_events(&rl, &s, trace_recs.v, trace_recs.n,
                             s.ring_dropped);
    if (rc == 0)
        rc = print_report(&s, 0, a->json, have_rl ? &rl : NULL, a->every);
    if (rc == 0 && a->svg) {
        tl_from_snapshot(&tl, &s);
        tl_title(&tl, &s);
        rc = write_svg(&tl, a->svg);
    }
    gm_tl_free(&tl);
    if (have_rl)
        gm_rl_free(&rl);
    free(trace_recs.v);
    memset(&trace_recs, 0, sizeof trace_recs);
    return rc;
}

/* ---- arguments ----------------------------------------------------------------- */

static int parse_args(struct report_args *a, int argc, char **argv)
{
    const char *popt = NULL;
    for (int i = 1; i < argc; i++) {
        int r = 0;
        uint64_t v;
        const char *every = NULL;
        if ((r = gm_opt_flag("report", argv[i], "--json")) != 0) {
            if (r < 0)
                return -1;
            a->json = true;
        } else if ((r = gm_opt_value("report", argc, argv, &i, "--every",
                                   &every)) != 0) {
            if (r < 0)
                return -1;
            if (gm_parse_uint(every, &v) != 0 || v == 0) {
                fprintf(stderr, "gpumem: report: --every '%s' is not a whole "
                        "number of steps from 1\n", every);
                return -1;
            }
            a->every = v;
        } else if ((r = gm_opt_value("report", argc, argv, &i, "--svg",
                                   &a->svg)) != 0 ||
                 (r = gm_opt_value("report", argc, argv, &i, "--from",
                                   &a->from)) != 0 ||
                 (r = gm_opt_value("report", argc, argv, &i, "--prefix",
                                   &popt)) != 0) {
            if (r < 0)
                return -1;
        } else if (argv[i][0] != '-' && a->pid == 0 &&
                   gm_parse_uint(argv[i], &v) == 0 && v > 0 &&
                   v <= 0x7fffffff) {
            a->pid = (int)v;
        } else {
            fprintf(stderr, "gpumem: report: unexpected %s '%s'; usage: "
                    "gpumem report [PID | --from TRACE.jsonl] [--json] "
                    "[--svg FILE] [--every N]\n", argv[i][0] == '-' ? "option"
                                                        : "argument", argv[i]);
            return -1;
        }
    }
    a->prefix = gm_tool_prefix("report", popt);
    return a->prefix ? 0 : -1;
}

int gm_cmd_report(int argc, char **argv)
{
    struct report_args a = { 0 };
    if (parse_args(&a, argc, argv) != 0)
        return GM_EXIT_USAGE;
    return a.from ? report_trace(&a) : report_pid(&a);
}
