/*
 * tools/cli/cmd_log.c — `gpumem log [-f] [--format jsonl|csv|text]
 * [--kinds K,...] [--prefix P] [PID...]`: print the events of the
 * processes' rings, oldest first, with a "lost" line for every gap
 * (records overwritten or dropped before they were read); with -f keep
 * polling every 100 ms until the followed processes have exited.
 *
 * Invariants: every event index of a followed segment is printed or
 * counted lost exactly once (the reader's drain guarantees it); a segment
 * is drained to its end (flushing unpublished records) once its writer is
 * gone, and then closed. In jsonl a "process" line precedes each
 * process's events, carrying the command, policy and device limits, so
 * `gpumem report --from` can rebuild the figures from the file alone.
 * The command and policy are printed only through tools/lib/escape.h
 * (terminal form in text, valid UTF-8 in jsonl).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "policy/parse.h"
#include "policy/policy.h"
#include "tools/cli/gpumem.h"
#include "tools/lib/escape.h"
#include "tools/lib/util.h"

const char gm_help_log[] =
    "NAME\n"
    "    gpumem log - print the event streams of processes under gpumem\n"
    "\n"
    "SYNOPSIS\n"
    "    gpumem log [-f] [--format jsonl|csv|text] [--kinds K[,K...]]\n"
    "               [--prefix P] [PID...]\n"
    "    gpumem log --from FILE [--format jsonl|csv|text] [PID...]\n"
    "\n"
    "DESCRIPTION\n"
    "    Prints the events each process's library recorded in its segment's\n"
    "    ring (alloc, free, oom, limit, context, spill, mode, over_limit,\n"
    "    wait_begin, wait_end, trim, reclaim, host, step, mark, forecast,\n"
    "    context_end, ctx_freed), oldest first, for the\n"
    "    given PIDs or for every segment of the current user. The ring\n"
    "    holds the last GPUMEM_RING_EVENTS events; older ones, and any a\n"
    "    producer had to drop, are reported as one line per gap saying how\n"
    "    many were lost.\n"
    "\n"
    "    Formats (one line per event):\n"
    "    text   time, pid, device, kind, API, size, address, used after\n"
    "           the event, latency; host (pinned memory) events show the\n"
    "           change (+/-), the host address and the pinned total after\n"
    "           it; step, mark and forecast events show the step count,\n"
    "           the mark's number, the time and steps left; ctx_freed\n"
    "           the allocations a context's end freed (count, bytes);\n"
    "           gaps as\n"
    "           \"pid P: lost N events\". Command lines and\n"
    "           policies are escaped: control bytes, DEL and bytes that\n"
    "           are not UTF-8 as \\xHH, a backslash as \\\\.\n"
    "    jsonl  one JSON object per line: pid, seq (event index), ts_ns,\n"
    "           kind, api, dev (null for host memory), tid, size, addr,\n"
    "           used_after, extra, lat_ns. Each process starts with a\n"
    "           {\"kind\":\"process\",...} line (command, policy, limits);\n"
    "           gaps are {\"pid\":P,\"kind\":\"lost\",\"count\":N}.\n"
    "           Strings are valid UTF-8: a byte that is not becomes\n"
    "           \\ufffd. A host event's addr is its signed change (two's\n"
    "           complement) and extra its host address.\n"
    "    csv    a header line, then pid,seq,ts_ns,kind,api,dev,tid,size,\n"
    "           addr,used_after,extra,lat_ns; a gap is a row of kind lost\n"
    "           with the count in size.\n"
    "    In every format a kind or API this version does not know (a\n"
    "    newer writer's) is printed by number: kind19, api40 (a string\n"
    "    in jsonl, like the names).\n"
    "\n"
    "OPTIONS\n"
    "    -f, --follow\n"
    "        Keep printing new events (polling every 100 ms) until every\n"
    "        followed process has exited. Without PIDs, processes that\n"
    "        start meanwhile are followed too, and gpumem log waits for a\n"
    "        first one when none exists.\n"
    "    --format F\n"
    "        text (default), jsonl or csv.\n"
    "    --kinds K[,K...]\n"
    "        Only these event kinds (e.g. oom,alloc). Gap lines and the\n"
    "        jsonl process lines are always printed.\n"
    "    --from FILE\n"
    "        Print the driver calls of a recording (gpumem record) or a\n"
    "        text trace instead of rings: one line per call (time, pid,\n"
    "        device, operation, size, address, result, thread), a line per\n"
    "        gap where records were lost and for each process that did\n"
    "        not close its recording. -f and --kinds do not apply.\n"
    "    --prefix P\n"
    "        Read segments named P.<pid> (default: $GPUMEM_SHM_PREFIX, else\n"
    "        gpumem), in $GPUMEM_SHM_DIR (default /dev/shm). A PID is one\n"
    "        of this pid namespace: a container's process by its host pid.\n"
    "    -h, --help\n"
    "        Print this manual page and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   Success.\n"
    "    1   A PID given has no readable segment (with --from: no\n"
    "        section in FILE), or FILE cannot be read.\n"
    "    2   Unknown option, bad format, kind or PID.\n"
    "\n"
    "EXAMPLES\n"
    "    gpumem log --kinds oom 41017\n"
    "    gpumem log -f --format jsonl > trace.jsonl; gpumem report --from "
    "trace.jsonl\n";

enum fmt { FMT_TEXT, FMT_JSONL, FMT_CSV };

#define MAX_FOLLOW 1024
#define DRAIN_BATCH 1024

struct tracked {
    int pid;                     /* shown: in this pid namespace if known */
    struct gm_seg_id id;         /* the segment's name */
    bool done;
    struct gm_seg seg;
    struct gm_cursor cur;
};

struct log_ctx {
    enum fmt fmt;
    uint32_t kinds;              /* bit per enum gm_ev_kind; 0 = all */
    bool follow;
    const char *prefix;
    struct tracked *t;
    size_t nt;
    bool named;                  /* PIDs were given */
    const char *from;            /* --from FILE: a recording */
};

static int parse_kinds(const char *s, uint32_t *mask)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    *mask = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        unsigned k;
        for (k = 1; k < GM_EV_COUNT; k++)
            if (strcmp(tok, gm_ev_kind_name(k)) == 0)
                break;
        if (k == GM_EV_COUNT) {
            fprintf(stderr, "gpumem: log: unknown event kind '%s'; kinds: ",
                    tok);
            for (k = 1; k < GM_EV_COUNT; k++)
                fprintf(stderr, "%s%s", k > 1 ? "," : "", gm_ev_kind_name(k));
            fputc('\n', stderr);
            return -1;
        }
        *mask |= 1u << k;
    }
    return *mask ? 0 : -1;
}

/* ---- printing -------------------------------------------------------------- */

static void print_process(const struct log_ctx *c, const struct gm_seg *s,
                          int pid)
{
    static struct gm_snapshot snap;
    if (gm_seg_snapshot(s, &snap) < 0)
        return;
    if (c->fmt == FMT_CSV)
        return;
    if (c->fmt == FMT_TEXT) {
        printf("pid %d: ", pid);
        gm_esc_term_put(stdout, snap.cmdline, 0);
        fputs(" [", stdout);
        gm_esc_term_put(stdout, snap.policy, 0);
        fputs("]\n", stdout);
        return;
    }
    printf("{\"pid\":%d,\"kind\":\"process\",\"command\":", pid);
    gm_json_str(stdout, snap.cmdline);
    printf(",\"policy\":");
    gm_json_str(stdout, snap.policy);
    printf(",\"mode\":\"%s\",\"on_oom\":\"%s\",\"start_realtime_ns\":%llu,"
           "\"devices\":[", gm_mode_name((enum gm_mode)snap.mode),
           gm_on_oom_name((enum gm_on_oom)snap.on_oom),
           (unsigned long long)snap.start_realtime_ns);
    unsigned shown = 0;
    for (unsigned i = 0; i < snap.dev_count && i < GM_ABI_MAX_DEVICES; i++) {
        const struct gm_abi_dev *d = &snap.dev[i];
        if (!d->present)
            continue;
        printf("%s{\"device\":%u,\"physical\":%llu,\"limit\":%llu}",
               shown++ ? "," : "", i, (unsigned long long)d->physical,
               (unsigned long long)d->limit);
    }
    printf("]}\n");
}

static void print_lost(const struct log_ctx *c, int pid, uint64_t n)
{
    if (c->fmt == FMT_JSONL)
        printf("{\"pid\":%d,\"kind\":\"lost\",\"count\":%llu}\n", pid,
               (unsigned long long)n);
    else if (c->fmt == FMT_CSV)
        printf("%d,,,lost,,,,%llu,,,,\n", pid, (unsigned long long)n);
    else
        printf("pid %d: lost %llu event%s\n", pid, (unsigned long long)n,
               n == 1 ? "" : "s");
}

/* A host event (docs/abi.md) holds |delta| in size, the signed delta in
 * addr, the pinned total after it in used_after and the host address in
 * extra: shown as "+2.0 MiB at 0x7f.. pinned 2.0 MiB". */
static void host_fields(const struct gm_abi_record *r, char *size,
                        size_t cap, uint64_t *addr)
{
    char mag[32];
    gm_format_size(r->size, mag, sizeof mag);
    snprintf(size, cap, "%c%s", (int64_t)r->addr < 0 ? '-' : '+', mag);
    *addr = r->extra;
}

/* Step, mark and forecast events: their own figures, not a size. */
static bool print_program_event(const char *when, int pid, const char *dev,
                                const struct gm_abi_record *r)
{
    char used[32];
    gm_format_size(r->used_after, used, sizeof used);
    const char *k = gm_ev_kind_name(r->kind);
    switch (r->kind) {
    case GM_EV_STEP:
        printf("%s pid %d %s %-10s step %llu used %s\n", when, pid, dev, k,
               (unsigned long long)r->size, used);
        return true;
    case GM_EV_MARK:
        printf("%s pid %d %s %-10s mark %llu at step %llu used %s\n", when,
               pid, dev, k, (unsigned long long)r->addr,
               (unsigned long long)r->size, used);
        return true;
    case GM_EV_FORECAST: {
        char rate[32];
        gm_format_size(r->extra, rate, sizeof rate);
        printf("%s pid %d %s %-10s limit in about %llu s", when, pid, dev, k,
               (unsigned long long)r->size);
        if (r->addr != UINT64_MAX)
            printf(" (%llu steps)", (unsigned long long)r->addr);
        printf(" growing %s/s used floor %s\n", rate, used);
        return true;
    }
    case GM_EV_CTX_FREED: {
        char b[32];
        gm_format_size(r->size, b, sizeof b);
        printf("%s pid %d %s %-10s %llu allocation%s (%s) the program never "
               "freed, freed with its context used %s\n", when, pid, dev, k,
               (unsigned long long)r->addr, r->addr == 1 ? "" : "s", b, used);
        return true;
    }
    default:
        return false;
    }
}

/* kind and api: the record's names (tools' form: by number when this
 * build does not know the value). */
static void print_text(int pid, const struct gm_abi_record *r,
                       const char *kind, const char *api)
{
    time_t sec = (time_t)(r->ts_ns / 1000000000ull);
    struct tm tm;
    char when[32], size[40], used[32], lat[32], dev[16] = "host";
    bool host = r->kind == GM_EV_HOST;
    uint64_t addr = r->addr;
    localtime_r(&sec, &tm);
    strftime(when, sizeof when, "%H:%M:%S", &tm);
    if (host)
        host_fields(r, size, sizeof size, &addr);
    else
        gm_format_size(r->size, size, sizeof size);
    gm_format_size(r->used_after, used, sizeof used);
    gm_format_latency(r->lat_ns, lat, sizeof lat);
    if (r->dev != GM_ABI_NO_DEVICE)
        snprintf(dev, sizeof dev, "dev %u", r->dev);
    else if (!host)
        snprintf(dev, sizeof dev, "-");
    char stamp[48];
    snprintf(stamp, sizeof stamp, "%s.%06llu", when,
             (unsigned long long)(r->ts_ns / 1000 % 1000000));
    if (print_program_event(stamp, pid, dev, r))
        return;
    printf("%s.%06llu pid %d %s %-10s %-24s %11s at 0x%llx %s %s", when,
           (unsigned long long)(r->ts_ns / 1000 % 1000000), pid, dev,
           kind, api, size,
           (unsigned long long)addr, host ? "pinned" : "used", used);
    if (r->kind == GM_EV_ALLOC || r->kind == GM_EV_FREE)
        printf(" lat %s", lat);
    if (r->kind == GM_EV_OOM) {
        char lim[32];
        gm_format_size(r->extra, lim, sizeof lim);
        printf(" limit %s", lim);
    }
    putchar('\n');
}

static void print_event(const struct log_ctx *c, int pid,
                        const struct gm_abi_record *r)
{
    if (c->kinds && (r->kind >= 32 || !(c->kinds & (1u << r->kind))))
        return;
    unsigned long long seq = (unsigned long long)(r->seq - 1);
    char kb[GM_ABI_NAME_CAP], ab[GM_ABI_NAME_CAP];
    const char *kind = gm_ev_kind_text(r->kind, kb, sizeof kb);
    const char *api = gm_api_text(r->api, ab, sizeof ab);
    if (c->fmt == FMT_TEXT) {
        print_text(pid, r, kind, api);
    } else if (c->fmt == FMT_CSV) {
        printf("%d,%llu,%llu,%s,%s,", pid, seq, (unsigned long long)r->ts_ns,
               kind, api);
        if (r->dev != GM_ABI_NO_DEVICE)
            printf("%u", r->dev);
        printf(",%u,%llu,%llu,%llu,%llu,%u\n", r->tid,
               (unsigned long long)r->size, (unsigned long long)r->addr,
               (unsigned long long)r->used_after,
               (unsigned long long)r->extra, r->lat_ns);
    } else {
        printf("{\"pid\":%d,\"seq\":%llu,\"ts_ns\":%llu,\"kind\":\"%s\","
               "\"api\":\"%s\",\"dev\":", pid, seq,
               (unsigned long long)r->ts_ns, kind, api);
        if (r->dev != GM_ABI_NO_DEVICE)
            printf("%u", r->dev);
        else
            printf("null");
        printf(",\"tid\":%u,\"size\":%llu,\"addr\":%llu,\"used_after\":%llu,"
               "\"extra\":%llu,\"lat_ns\":%u}\n", r->tid,
               (unsigned long long)r->size, (unsigned long long)r->addr,
               (unsigned long long)r->used_after,
               (unsigned long long)r->extra, r->lat_ns);
    }
}

/* ---- draining -------------------------------------------------------------- */

/* Print what the ring holds past the cursor; flush: count unpublished
 * records lost (writer gone, or a one-shot read). */
static void drain_all(const struct log_ctx *c, struct tracked *t, bool flush)
{
    static struct gm_abi_record buf[DRAIN_BATCH];
    for (unsigned rounds = 0; rounds < 1u << 16; rounds++) {
        uint64_t lost = 0;
        size_t n = gm_seg_drain(&t->seg, &t->cur, buf, DRAIN_BATCH,
                                flush ? GM_DRAIN_FLUSH : 0, &lost);
        if (lost)
            print_lost(c, t->pid, lost);
        for (size_t i = 0; i < n; i++)
            print_event(c, t->pid, &buf[i]);
        if (n == 0 && lost == 0)
            break;
    }
}

static bool is_tracked(const struct log_ctx *c, const struct gm_seg_id *id)
{
    for (size_t i = 0; i < c->nt; i++)
        if (c->t[i].id.pid == id->pid && c->t[i].id.pidns == id->pidns)
            return true;
    return false;
}

/* Track the segment named by id, or (id NULL) the one of the process
 * that has `pid` here (gm_seg_open_pid). */
static int track(struct log_ctx *c, const struct gm_seg_id *id, int pid,
                 bool quiet)
{
    char err[256];
    if (c->nt >= MAX_FOLLOW)
        return -1;
    struct tracked *t = &c->t[c->nt];
    memset(t, 0, sizeof *t);
    int r = id != NULL ? gm_seg_open_id(&t->seg, gm_tool_shm_dir(),
                                        c->prefix, id, err, sizeof err)
                       : gm_seg_open_pid(&t->seg, gm_tool_shm_dir(),
                                         c->prefix, pid, err, sizeof err);
    if (r != 0) {
        if (!quiet)
            gm_cli_open_failed("log", c->prefix, pid, err);
        return -1;
    }
    if (!c->named && t->seg.uid != getuid()) {
        gm_seg_close(&t->seg);
        return -1;
    }
    /* Keyed by the name, as discover() lists it (the reader refuses a
     * header that is not the name's process). */
    t->id = id != NULL ? *id
                       : (struct gm_seg_id){ (int)t->seg.pid, t->seg.name_ns };
    if (id == NULL && is_tracked(c, &t->id)) {
        gm_seg_close(&t->seg);
        return 0; /* named twice */
    }
    int host = gm_seg_host_pid(&t->seg, NULL);
    t->pid = host > 0 ? host : (int)t->seg.pid;
    gm_cursor_init(&t->cur, &t->seg, false);
    c->nt++;
    print_process(c, &t->seg, t->pid);
    return 0;
}

static void discover(struct log_ctx *c)
{
    static struct gm_seg_id ids[MAX_FOLLOW];
    int n = gm_reader_list_ids(gm_tool_shm_dir(), c->prefix, ids,
                               MAX_FOLLOW);
    for (int i = 0; i < n && i < MAX_FOLLOW; i++)
        if (!is_tracked(c, &ids[i]))
            track(c, &ids[i], ids[i].pid, true);
}

/* One pass over every open segment; returns how many are still open. */
static size_t poll_once(struct log_ctx *c)
{
    size_t open = 0;
    for (size_t i = 0; i < c->nt; i++) {
        struct tracked *t = &c->t[i];
        if (t->done)
            continue;
        bool gone = !c->follow || gm_seg_state(&t->seg) != GM_SEG_ALIVE;
        drain_all(c, t, gone);
        if (gone) {
            gm_seg_close(&t->seg);
            t->done = true;
        } else {
            open++;
        }
    }
    return open;
}

static int run_log(struct log_ctx *c)
{
    for (;;) {
        if (!c->named)
            discover(c);
        size_t open = poll_once(c);
        fflush(stdout);
        if (!c->follow)
            return 0;
        if (open == 0 && (c->named || c->nt > 0))
            return 0;
        struct timespec ts = { 0, 100000000L };
        nanosleep(&ts, NULL);
    }
}

static int parse_pid(const char *s, int *pid)
{
    uint64_t v;
    if (gm_parse_uint(s, &v) != 0 || v == 0 || v > 0x7fffffff) {
        fprintf(stderr, "gpumem: log: '%s' is not a pid (gpumem log "
                "--help)\n", s);
        return -1;
    }
    *pid = (int)v;
    return 0;
}

static int parse_args(struct log_ctx *c, int argc, char **argv, int *pids,
                      size_t *np)
{
    const char *popt = NULL, *v;
    for (int i = 1; i < argc; i++) {
        int r = 0;
        if ((r = gm_opt_flag("log", argv[i], "-f")) > 0 ||
            (r == 0 && (r = gm_opt_flag("log", argv[i], "--follow")) > 0)) {
            c->follow = true;
        } else if (r == 0 && (r = gm_opt_value("log", argc, argv, &i,
                                               "--format", &v)) > 0) {
            if (strcmp(v, "jsonl") == 0)
                c->fmt = FMT_JSONL;
            else if (strcmp(v, "csv") == 0)
                c->fmt = FMT_CSV;
            else if (strcmp(v, "text") == 0)
                c->fmt = FMT_TEXT;
            else {
                fprintf(stderr, "gpumem: log: unknown format '%s'; use "
                        "text, jsonl or csv\n", v);
                return -1;
            }
        } else if (r == 0 && (r = gm_opt_value("log", argc, argv, &i,
                                               "--kinds", &v)) > 0) {
            if (parse_kinds(v, &c->kinds) != 0)
                return -1;
        } else if (r == 0 && (r = gm_opt_value("log", argc, argv, &i,
                                               "--prefix", &popt)) > 0) {
            continue;
        } else if (r == 0 && (r = gm_opt_value("log", argc, argv, &i,
                                               "--from", &c->from)) > 0) {
            continue;
        } else if (r < 0) {
            return -1;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "gpumem: log: unknown option '%s'; usage: gpumem "
                    "log [-f] [--format jsonl|csv|text] [--kinds K,...] "
                    "[--prefix P] [PID...]\n", argv[i]);
            return -1;
        } else {
            if (*np >= MAX_FOLLOW || parse_pid(argv[i], &pids[*np]) != 0)
                return -1;
            (*np)++;
        }
    }
    c->prefix = gm_tool_prefix("log", popt);
    return c->prefix ? 0 : -1;
}

int gm_cmd_log(int argc, char **argv)
{
    static int pids[MAX_FOLLOW];
    struct log_ctx c = { .fmt = FMT_TEXT };
    size_t np = 0;
    if (parse_args(&c, argc, argv, pids, &np) != 0)
        return GM_EXIT_USAGE;
    if (c.from != NULL)
        return gm_log_from(c.from, (int)c.fmt, pids, np);
    c.t = calloc(MAX_FOLLOW, sizeof *c.t);
    if (c.t == NULL) {
        fprintf(stderr, "gpumem: log: out of memory\n");
        return 1;
    }
    c.named = np > 0;
    if (c.fmt == FMT_CSV)
        printf("pid,seq,ts_ns,kind,api,dev,tid,size,addr,used_after,extra,"
               "lat_ns\n");
    int rc = 0;
    for (size_t i = 0; i < np; i++)
        if (track(&c, NULL, pids[i], false) != 0)
            rc = 1;
    if (rc == 0)
        rc = run_log(&c);
    for (size_t i = 0; i < c.nt; i++)
        if (!c.t[i].done)
            gm_seg_close(&c.t[i].seg);
    free(c.t);
    return rc;
}
