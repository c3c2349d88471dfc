/*
 * tools/top/top.c — `gpumem-top`: a live view of every process using the
 * gpumem library under a prefix. Collects the data (segment scans through
 * tools/lib/util.h, rates between refreshes, usage history, the last events
 * of the process in the detail view), handles keys and the batch modes
 * (--once: the table as text; --json: one JSON document per refresh).
 * Drawing is tools/top/view.c. Shared budgets (group segments of the prefix)
 * are read at every refresh: one group line per group and device.
 *
 * Invariants: entries are keyed by (pid, start time, device) so a reused
 * pid is a new row. Device sums (the device lines, --json's devices) are
 * per physical card, keyed by the UUID of each process's device block
 * (the ordinal only when none was recorded: tools/lib/card.h), so
 * processes that see different cards as one ordinal are never summed
 * together. The rows are the processes `--once` lists (running
 * and kept), by the liveness rule of tools/lib/util.h (a zombie is not
 * running). The segment of each running process is held open between
 * refreshes (up to MAX_HELD of them), so that when it goes (a segment
 * not kept is unlinked at exit) its last read, from the open file, gives
 * its final figures, refusals included; an entry whose process went
 * stays 10 s, dimmed, then goes; a kept one stays while its segment
 * does. Figures of a process that is not running are final and never
 * read again. Rates are per second over the last refresh interval. The
 * detail view reads the events of its process from its own open segment,
 * or from the held one once the file is gone.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curses.h>

#include "policy/parse.h"
#include "policy/policy.h"
#include "shim/base/clock.h"
#include "tools/lib/card.h"
#include "tools/lib/reader.h"
#include "tools/lib/util.h"
#include "tools/lib/version.h"
#include "tools/top/trendcol.h"
#include "tools/top/view.h"

#define GONE_NS 10000000000ull
#define MAX_ENTS 4096
#define MAX_HELD 256             /* running processes' segments held open */
#define CMD_DIFF_MAX 256         /* rows compared to find what differs */

static const char help_text[] =
    "NAME\n"
    "    gpumem-top - live view of GPU memory per process under gpumem\n"
    "\n"
    "SYNOPSIS\n"
    "    gpumem-top [-d SECONDS] [-n N] [--job J] [--prefix P]\n"
    "    gpumem-top --once [--job J] [--prefix P]\n"
    "    gpumem-top --json [-d SECONDS] [-n N] [--job J] [--prefix P]\n"
    "\n"
    "DESCRIPTION\n"
    "    Shows every process whose CUDA memory goes through libgpumem.so,\n"
    "    from the library's own exact figures. At the top, one line per\n"
    "    physical device (card), whatever ordinal each process sees it as\n"
    "    (CUDA_VISIBLE_DEVICES): dev, those ordinals and GPU- with the first\n"
    "    8 hex digits of its UUID (dev 0 GPU-1a2b3c4d; a process that\n"
    "    recorded no UUID is counted on a line of its ordinal alone), memory\n"
    "    used by these processes against the physical total (bar), the sum\n"
    "    of their limits, the number of processes. Then one line per\n"
    "    shared budget (GPUMEM_GROUP) and device: group name, used against\n"
    "    the group limit (bar), peak, live members and, for each, pid,\n"
    "    memory used / guaranteed share (wrapped onto more lines when they\n"
    "    do not fit). Below, one row per process and device: PID (in\n"
    "    this pid namespace: a container's process shows its host pid;\n"
    "    ~N, its pid inside the container, when that was never known),\n"
    "    USER, JOB (when some process has one: the Slurm job.step, else\n"
    "    the Kubernetes namespace/pod, else the container id's first 12\n"
    "    digits), DEV, USED, PEAK, LIMIT, %LIMIT (bar; in static mode how full the\n"
    "    arena is, marked arena), ALLOC/s, FREE/s, OOMS (refused requests),\n"
    "    FRAG@PK (fragmentation when the peak was last reached), P99\n"
    "    allocation latency, TREND (the leak verdict: growth of the used\n"
    "    floor per step, +3.0M/st, or per second, +1.9M/s; flat; ? with too\n"
    "    little history), ETA (time left before the limit at that growth),\n"
    "    MODE and COMMAND (the program without its\n"
    "    directory, then its arguments; when they do not fit, the arguments\n"
    "    shared with a similar row are shown as ..). Columns that do not fit\n"
    "    are dropped, JOB first, then USER, MODE, ETA, FREE/s, FRAG@PK, TREND,\n"
    "    P99 and PEAK, so that COMMAND keeps a fifth of the width (20 columns\n"
    "    at least); lines that do not fit are left out (on fewer than 4\n"
    "    lines, one says the terminal is too small).\n"
    "    The rows are the processes --once lists: running ones, and exited\n"
    "    ones kept with GPUMEM_KEEP=1 (dimmed, marked (kept)); a process\n"
    "    that exits or is killed while watched stays 10 seconds, dimmed,\n"
    "    with its final figures. Microseconds are written us, or with the\n"
    "    micro sign when the locale's character set is UTF-8.\n"
    "\n"
    "    Keys: q quit (on every screen); s / S next sort column / reverse\n"
    "    order; d filter by device (one card at a time, then all); j\n"
    "    filter by job (cycling through the jobs listed, then all); /\n"
    "    filter by command text; Up / Down select; Enter detail view\n"
    "    (usage history with the limit line and\n"
    "    OOM marks, size and latency histograms, last refusals and events,\n"
    "    policy); Esc back; h help (any other key than q returns).\n"
    "\n"
    "OPTIONS\n"
    "    -d SECONDS, --delay SECONDS\n"
    "        Refresh interval (default 1; 0.1 to 3600).\n"
    "    -n N, --iterations N\n"
    "        Stop after N refreshes.\n"
    "    --once\n"
    "        Print the table and the groups once as text (as gpumem ps) and\n"
    "        exit.\n"
    "    --json\n"
    "        Print one JSON document per refresh, one per line:\n"
    "        {\"time_ns\", \"prefix\", \"devices\": [{device, uuid,\n"
    "        ordinals, physical, limits, used, processes}], \"processes\":\n"
    "        [...], \"groups\": [...]}: a device per card, as the device\n"
    "        lines (device: its lowest ordinal; uuid null when none was\n"
    "        recorded; limits_bytes null when some process there has no\n"
    "        limit, unlimited_processes counting them); processes and\n"
    "        groups as in gpumem ps --json (no limit: null), without its\n"
    "        leak objects (they cost a read of every ring).\n"
    "    --job J\n"
    "        Only the processes of job J (as gpumem ps --job: the JOB\n"
    "        label, a Slurm job id or job.step, a pod name or\n"
    "        namespace/pod, a container name, or 4 or more leading digits\n"
    "        of a container id); interactively, j then cycles from it.\n"
    "    --prefix P\n"
    "        Read segments named P.<pid> in $GPUMEM_SHM_DIR (default\n"
    "        /dev/shm) (default prefix: $GPUMEM_SHM_PREFIX, else\n"
    "        gpumem).\n"
    "    -h, --help\n"
    "        Print this manual page and exit.\n"
    "    --version\n"
    "        Print \"gpumem-top VERSION\" and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   Success.\n"
    "    1   The terminal could not be set up (standard input or output is\n"
    "        not one: use --once or --json) or the directory read.\n"
    "    2   Unknown option or bad value, or a segment directory that is\n"
    "        not safe to use (GPUMEM_SHM_DIR).\n"
    "\n"
    "EXAMPLES\n"
    "    gpumem-top\n"
    "    gpumem-top --once\n"
    "    gpumem-top --json -d 5 -n 12 > usage.jsonl\n";

/* The segment of a running process, held open between refreshes: once
 * the process is gone, the last read of it gives its final figures. */
struct held {
    bool open;
    bool seen;                   /* in the latest scan */
    bool done;                   /* its process ended: read for the last time */
    struct gm_seg_id id;         /* the segment's name */
    uint64_t start;
    struct gm_seg seg;
};

struct top {
    const char *prefix;
    double delay;
    long iters;                  /* 0: no end */
    bool once, json;
    struct gm_top_ent *ents[MAX_ENTS];
    size_t nents;
    struct gm_top_ent *rows[MAX_ENTS];
    struct gm_top_devsum devs[GM_TOP_CARDS];
    size_t ndevs;
    bool card_filter;            /* d: only the rows on one card */
    struct gm_card card;         /* that card */
    struct gm_top_group groups[GM_TOP_GROUPS];
    size_t ngroups;
    struct gm_top_model m;
    struct held held[MAX_HELD];
    /* detail view */
    struct gm_seg *det;          /* &det_own, or a held segment; NULL */
    struct gm_seg det_own;
    int det_pid, det_dev;
    uint64_t det_pidns;
    uint64_t det_start;
    struct gm_cursor det_cur;
    struct gm_abi_record ev[GM_TOP_EVENTS];
    size_t nev;
    struct gm_abi_record ref[GM_TOP_REFUSALS];
    size_t nref;
};

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/* ---- collection ---------------------------------------------------------------- */

static struct gm_top_ent *find_ent(struct top *t, int pid, uint64_t pidns,
                                   uint64_t start, int dev)
{
    for (size_t i = 0; i < t->nents; i++) {
        struct gm_top_ent *e = t->ents[i];
        if (e->pid == pid && e->pidns == pidns && e->start_ticks == start &&
            e->dev == dev)
            return e;
    }
    if (t->nents >= MAX_ENTS)
        return NULL;
    struct gm_top_ent *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    e->pid = pid;
    e->pidns = pidns;
    e->start_ticks = start;
    e->dev = dev;
    t->ents[t->nents++] = e;
    return e;
}

/* cmd_prog / cmd_args of a new command line (cmd_diff: build_rows). */
static void cmd_split(struct gm_top_ent *e)
{
    size_t end = strcspn(e->cmd, " ");
    size_t base = 0;
    for (size_t i = 0; i < end; i++)
        if (e->cmd[i] == '/')
            base = i + 1;
    e->cmd_prog = base;
    e->cmd_args = e->cmd_diff = end;
}

/* Static mode: the arena is charged whole, so what it holds is its size
 * (used less the context and the pools, which are charged beside it) and
 * how full it is, the live pieces (live_bytes). */
static void arena_figures(struct gm_top_ent *e, unsigned mode)
{
    const struct gm_abi_dev *d = &e->d;
    uint64_t beside = d->context_bytes + d->pool_reserve;
    e->arena = mode == GM_MODE_STATIC && d->used > beside;
    e->arena_size = e->arena ? d->used - beside : 0;
    e->arena_used = !e->arena ? 0
                    : d->live_bytes < e->arena_size ? d->live_bytes
                                                    : e->arena_size;
}

/* The row's figures and texts into e. */
static void copy_row(struct gm_top_ent *e, const struct gm_row *r)
{
    const struct gm_snapshot *s = &r->sp->p.snap;
    if (r->d != NULL)
        e->d = *r->d;
    else
        memset(&e->d, 0, sizeof e->d);
    gm_user_name(r->sp->p.uid, e->user, sizeof e->user);
    int shown = gm_proc_shown_pid(&r->sp->p);
    if (shown > 0)
        e->show_pid = shown;     /* a gone container process: the last */
    e->ident = s->ident;
    gm_ident_job(&s->ident, e->job, sizeof e->job);
    snprintf(e->mode, sizeof e->mode, "%s",
             gm_mode_name((enum gm_mode)s->mode));
    snprintf(e->state, sizeof e->state, "%s", gm_proc_state_word(r->sp));
    if (strcmp(e->cmd, s->cmdline) != 0) {
        snprintf(e->cmd, sizeof e->cmd, "%s", s->cmdline);
        cmd_split(e);
    }
    snprintf(e->policy, sizeof e->policy, "%s", s->policy);
    arena_figures(e, s->mode);
}

/* Rates since the previous sample (0 once not running) and one more
 * usage sample, marked when a request was refused since the previous. */
static void add_sample(struct gm_top_ent *e, bool running, uint64_t now)
{
    if (!running) {
        e->arate = e->frate = 0;
    } else if (e->last_ns != 0 && now > e->last_ns) {
        double dt = (double)(now - e->last_ns) / 1e9;
        e->arate = (double)(e->d.allocs - e->last_allocs) / dt;
        e->frate = (double)(e->d.frees - e->last_frees) / dt;
    }
    bool oom = e->last_ns != 0 && e->d.refusals > e->last_ooms;
    if (e->nhist == GM_TOP_HIST) {
        memmove(e->hist, e->hist + 1, (GM_TOP_HIST - 1) * sizeof e->hist[0]);
        memmove(e->hist_oom, e->hist_oom + 1, GM_TOP_HIST - 1);
        e->nhist--;
    }
    e->hist[e->nhist] = e->d.used;
    e->hist_oom[e->nhist++] = oom;
    e->last_allocs = e->d.allocs;
    e->last_frees = e->d.frees;
    e->last_ooms = e->d.refusals;
    e->last_ns = now;
}

/* One read of a process on one device. A process that no longer runs
 * gave its final figures: they are kept, never read again. */
static void update_ent(struct gm_top_ent *e, const struct gm_row *r,
                       uint64_t now)
{
    bool running = r->sp->p.state == GM_SEG_ALIVE;
    e->seen = true;
    if (e->final)
        return;
    copy_row(e, r);
    add_sample(e, running, now);
    if (running) {
        e->gone = false;
    } else {
        if (!e->gone)
            e->gone_ns = now;
        e->gone = e->final = true;
    }
}

/* Every row of one process record into its entries; then the leak
 * analysis of the rows whose figures are the oldest (tools/top/trendcol.h
 * bounds how many per refresh). */
static void update_proc(struct top *t, const struct gm_scan *sc,
                        uint64_t now)
{
    static struct gm_row rows[MAX_ENTS];
    size_t n = gm_scan_rows(sc, rows, MAX_ENTS);
    gm_top_trend_begin();
    for (size_t i = 0; i < n; i++) {
        struct gm_top_ent *e = find_ent(t, rows[i].sp->p.pid,
                                        rows[i].sp->p.pidns,
                                        rows[i].sp->p.snap.start_ticks,
                                        rows[i].dev);
        if (e != NULL) {
            update_ent(e, &rows[i], now);
            if (!e->final || e->trend_ns == 0)
                gm_top_trend_want(e, &rows[i]);
        }
    }
    gm_top_trend_run(now);
}

/* ---- held segments ------------------------------------------------------------ */

static struct held *find_held(struct top *t, int pid, uint64_t pidns,
                              uint64_t start)
{
    for (size_t i = 0; i < MAX_HELD; i++)
        if (t->held[i].open && t->held[i].id.pid == pid &&
            t->held[i].id.pidns == pidns && t->held[i].start == start)
            return &t->held[i];
    return NULL;
}

static void release(struct top *t, struct held *h)
{
    if (!h->open || t->det == &h->seg)
        return;                  /* the detail view reads it: later */
    gm_seg_close(&h->seg);
    h->open = false;
}

/* Opens the segment of a running process to hold (when there is room). */
static void hold(struct top *t, const struct gm_seg_id *id, uint64_t start)
{
    char err[256];
    for (size_t i = 0; i < MAX_HELD; i++) {
        struct held *h = &t->held[i];
        if (h->open)
            continue;
        if (gm_seg_open_id(&h->seg, gm_tool_shm_dir(), t->prefix, id, err,
                           sizeof err) != 0)
            return;
        if (h->seg.start_ticks != start) {   /* replaced meanwhile */
            gm_seg_close(&h->seg);
            return;
        }
        h->open = h->seen = true;
        h->done = false;
        h->id = *id;
        h->start = start;
        return;
    }
}

/* Marks the held segments of the scan's processes seen; holds those of
 * new running processes; lets go of those whose process stopped running
 * with its segment still there (kept: the scan reads it). */
static void hold_scanned(struct top *t, const struct gm_scan *sc)
{
    for (size_t i = 0; i < MAX_HELD; i++)
        t->held[i].seen = false;
    for (size_t i = 0; i < sc->n; i++) {
        const struct gm_proc *p = &sc->procs[i].p;
        struct held *h = find_held(t, p->pid, p->pidns, p->snap.start_ticks);
        struct gm_seg_id id = { p->pid, p->pidns };
        if (h != NULL)
            h->seen = true;
        if (h != NULL && p->state != GM_SEG_ALIVE)
            release(t, h);
        else if (h == NULL && p->state == GM_SEG_ALIVE)
            hold(t, &id, p->snap.start_ticks);
    }
}

/* The processes held but no longer listed (their segment was unlinked at
 * exit, or they were killed): one more read of the open file, their
 * final one once they no longer run. */
static void read_vanished(struct top *t, uint64_t now)
{
    static struct gm_scan_proc sp;
    for (size_t i = 0; i < MAX_HELD; i++) {
        struct held *h = &t->held[i];
        if (!h->open || h->seen || h->done)
            continue;
        memset(&sp, 0, sizeof sp);
        if (gm_seg_summary(&h->seg, &sp.p) < 0) {
            h->done = true;
            continue;
        }
        sp.kept = (sp.p.snap.flags & GM_ABI_F_KEPT) != 0;
        snprintf(sp.path, sizeof sp.path, "%s", h->seg.path);
        struct gm_scan one = { &sp, 1 };
        update_proc(t, &one, now);
        h->done = sp.p.state != GM_SEG_ALIVE;
    }
}

/* Closes the held segments no entry needs any more. */
static void release_unused(struct top *t)
{
    for (size_t i = 0; i < MAX_HELD; i++) {
        struct held *h = &t->held[i];
        if (!h->open)
            continue;
        bool used = false;
        for (size_t k = 0; k < t->nents && !used; k++)
            used = t->ents[k]->pid == h->id.pid &&
                   t->ents[k]->pidns == h->id.pidns &&
                   t->ents[k]->start_ticks == h->start;
        if (!used && !h->seen)
            release(t, h);
    }
}

static void expire(struct top *t, uint64_t now)
{
    size_t k = 0;
    for (size_t i = 0; i < t->nents; i++) {
        struct gm_top_ent *e = t->ents[i];
        if (!e->seen && !e->gone) {  /* not read at its end: last seen */
            e->gone = true;
            e->gone_ns = now;
            e->arate = e->frate = 0;
            snprintf(e->state, sizeof e->state, "exited");
        }
        if (!e->seen && e->gone && now - e->gone_ns > GONE_NS) {
            free(e);
            continue;
        }
        t->ents[k++] = e;
    }
    t->nents = k;
}

/* The key of a device line (tools/lib/card.h). */
static struct gm_card card_of_sum(const struct gm_top_devsum *c)
{
    struct gm_card k;
    memcpy(k.uuid, c->uuid, sizeof k.uuid);
    k.dev = c->dev;
    return k;
}

/* Adds one process's block on ordinal dev to the sums of its card (a
 * new one when there is room). */
static void card_add(struct gm_top_devsum *cards, size_t *n, size_t cap,
                     int dev, const struct gm_abi_dev *d)
{
    struct gm_card key = gm_card_of(d, dev), ck;
    size_t k;
    for (k = 0; k < *n; k++) {
        ck = card_of_sum(&cards[k]);
        if (gm_card_same(&ck, &key))
            break;
    }
    if (k == *n) {
        if (*n >= cap)
            return;
        memset(&cards[k], 0, sizeof cards[k]);
        memcpy(cards[k].uuid, key.uuid, sizeof key.uuid);
        cards[k].dev = dev;
        (*n)++;
    }
    struct gm_top_devsum *c = &cards[k];
    c->dev = dev < c->dev ? dev : c->dev;
    c->ordinals |= 1ull << dev;
    c->physical = d->physical > c->physical ? d->physical : c->physical;
    c->limits += d->limit;
    c->unlimited += d->limit == 0;
    c->used += d->used;
    c->procs++;
}

/* Cards by their lowest ordinal, then UUID. */
static int cmp_card(const void *pa, const void *pb)
{
    const struct gm_top_devsum *a = pa, *b = pb;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    return memcmp(a->uuid, b->uuid, sizeof a->uuid);
}

/* "0 GPU-1a2b3c4d": the ordinals it is seen as (up to 4, then "+"),
 * its short UUID when there is one. */
static void card_label(struct gm_top_devsum *c)
{
    size_t cap = sizeof c->label, k = 0;
    unsigned listed = 0;
    c->label[0] = '\0';
    for (unsigned o = 0; o < GM_ABI_MAX_DEVICES && k < cap; o++) {
        if (!(c->ordinals & (1ull << o)))
            continue;
        if (listed++ == 4) {
            k += (size_t)snprintf(c->label + k, cap - k, "+");
            break;
        }
        k += (size_t)snprintf(c->label + k, cap - k, "%s%u",
                              listed > 1 ? "," : "", o);
    }
    if (gm_uuid_recorded(c->uuid) && k < cap) {
        char u[16];
        snprintf(c->label + k, cap - k, " %s",
                 gm_uuid_short(c->uuid, u, sizeof u));
    }
}

static void cards_finish(struct gm_top_devsum *cards, size_t n)
{
    qsort(cards, n, sizeof cards[0], cmp_card);
    for (size_t i = 0; i < n; i++)
        card_label(&cards[i]);
}

/* The device lines: one per card the running processes use. */
static void sum_devices(struct top *t)
{
    t->ndevs = 0;
    for (size_t i = 0; i < t->nents; i++) {
        const struct gm_top_ent *e = t->ents[i];
        if (!e->gone && e->dev >= 0 && e->dev < (int)GM_ABI_MAX_DEVICES)
            card_add(t->devs, &t->ndevs, GM_TOP_CARDS, e->dev, &e->d);
    }
    cards_finish(t->devs, t->ndevs);
}

/* The card the device filter shows, among the device lines; NULL when
 * it is not listed (now). */
static const struct gm_top_devsum *filter_card(const struct top *t)
{
    for (size_t i = 0; t->card_filter && i < t->ndevs; i++) {
        struct gm_card k = card_of_sum(&t->devs[i]);
        if (gm_card_same(&k, &t->card))
            return &t->devs[i];
    }
    return NULL;
}

static void add_group(struct top *t, const struct gm_group_view *v, int d,
                      bool multi)
{
    if (t->ngroups >= GM_TOP_GROUPS)
        return;
    struct gm_top_group *g = &t->groups[t->ngroups++];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", v->name);
    if (d >= 0) {
        const struct gm_group_view_dev *gd = &v->dev[d];
        if (multi)
            gm_uuid_short(gd->uuid, g->device, sizeof g->device);
        g->used = gd->used;
        g->peak = gd->peak;
        g->limit = gd->limit;
        g->physical = gd->physical;
    }
    g->live = gm_group_live_members(v);
    g->dead = gm_group_dead_members(v);
    for (unsigned i = 0; i < v->nmembers && i < GM_GROUP_MAX_MEMBERS; i++) {
        const struct gm_group_view_member *vm = &v->member[i];
        struct gm_top_gmember *m = &g->member[g->nmembers++];
        m->pid = vm->pid;
        m->weight = vm->weight;
        m->alive = vm->alive;
        m->used = d >= 0 ? vm->used[d] : 0;
        m->share = d >= 0 ? vm->share[d] : 0;
    }
}

/* The group lines: one per group and device (one per group before it
 * registers a device). */
static int collect_groups(struct top *t)
{
    struct gm_gscan gs;
    t->ngroups = 0;
    if (gm_gscan(t->prefix, 0, &gs) < 0)
        return -1;
    for (size_t i = 0; i < gs.n; i++) {
        const struct gm_group_view *v = &gs.groups[i].v;
        unsigned ndev = 0;
        for (unsigned d = 0; d < v->ndev && d < GM_GROUP_MAX_DEVICES; d++)
            ndev += v->dev[d].present;
        for (unsigned d = 0; d < v->ndev && d < GM_GROUP_MAX_DEVICES; d++)
            if (v->dev[d].present)
                add_group(t, v, (int)d, ndev > 1);
        if (ndev == 0)
            add_group(t, v, -1, false);
    }
    gm_gscan_free(&gs);
    return 0;
}

/* One refresh: the scan (running and kept processes, as --once lists
 * them), then the last read of the held segments of those that went. */
static int collect(struct top *t)
{
    struct gm_scan sc;
    if (gm_scan(t->prefix, 0, &sc) < 0)
        return -1;
    uint64_t now = gm_clock_monotonic_ns();
    for (size_t i = 0; i < t->nents; i++)
        t->ents[i]->seen = false;
    gm_top_trend_refresh();
    update_proc(t, &sc, now);
    hold_scanned(t, &sc);
    gm_scan_free(&sc);
    read_vanished(t, now);
    expire(t, now);
    release_unused(t);
    sum_devices(t);
    return collect_groups(t);
}

/* ---- rows: filter and sort ----------------------------------------------------- */

static const struct top *sort_top;

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

/* %LIMIT in per mille: used of the limit, or in static mode how full the
 * arena is. */
static uint64_t pct_key(const struct gm_top_ent *e)
{
    if (e->arena)
        return gm_share(e->arena_used, e->arena_size, 1000);
    return gm_share(e->d.used, e->d.limit, 1000);
}

/* The pid a row shows (its own when the host pid was never known). */
static int shown(const struct gm_top_ent *e)
{
    return e->show_pid > 0 ? e->show_pid : e->pid;
}

/* Growing rows above the others, by growth; rows with a forecast by its
 * time, those without after. */
static int cmp_growth(const struct gm_top_ent *a, const struct gm_top_ent *b)
{
    double x = a->trend == 2 ? a->growth : -1, y = b->trend == 2 ? b->growth : -1;
    return (x > y) - (x < y);
}

static int cmp_eta(const struct gm_top_ent *a, const struct gm_top_ent *b)
{
    double x = a->trend == 2 && a->eta_s == a->eta_s ? a->eta_s : 1e300;
    double y = b->trend == 2 && b->eta_s == b->eta_s ? b->eta_s : 1e300;
    return (x > y) - (x < y);
}

static int cmp_ent(const void *pa, const void *pb)
{
    const struct gm_top_ent *a = *(struct gm_top_ent *const *)pa;
    const struct gm_top_ent *b = *(struct gm_top_ent *const *)pb;
    int c = 0;
    switch (sort_top->m.sort) {
    case GM_COL_PID: c = cmp_u64((uint64_t)shown(a), (uint64_t)shown(b));
        break;
    case GM_COL_USER: c = strcmp(a->user, b->user); break;
    case GM_COL_JOB: c = strcmp(a->job, b->job); break;
    case GM_COL_DEV: c = a->dev - b->dev; break;
    case GM_COL_USED: c = cmp_u64(a->d.used, b->d.used); break;
    case GM_COL_PEAK: c = cmp_u64(a->d.peak, b->d.peak); break;
    case GM_COL_LIMIT: c = cmp_u64(a->d.limit, b->d.limit); break;
    case GM_COL_PCT: c = cmp_u64(pct_key(a), pct_key(b)); break;
    case GM_COL_ARATE: c = (a->arate > b->arate) - (a->arate < b->arate);
        break;
    case GM_COL_FRATE: c = (a->frate > b->frate) - (a->frate < b->frate);
        break;
    case GM_COL_OOMS: c = cmp_u64(a->d.refusals, b->d.refusals); break;
    case GM_COL_FRAG: c = cmp_u64(a->d.frag_peak_ppm, b->d.frag_peak_ppm);
        break;
    case GM_COL_P99:
        c = cmp_u64(gm_dev_lat_q(&a->d, 990), gm_dev_lat_q(&b->d, 990));
        break;
    case GM_COL_TREND: c = cmp_growth(a, b); break;
    case GM_COL_ETA: c = cmp_eta(a, b); break;
    case GM_COL_MODE: c = strcmp(a->mode, b->mode); break;
    case GM_COL_CMD: c = strcmp(a->cmd + a->cmd_prog, b->cmd + b->cmd_prog);
        break;
    default: break;
    }
    if (c == 0)
        c = cmp_u64((uint64_t)shown(a), (uint64_t)shown(b)) * 2 +
            (a->dev - b->dev);
    return sort_top->m.desc ? -c : c;
}

/* Where a word starts in a, at or before l: the first word that is not
 * the same in another command line that shares a's first l bytes. */
static size_t word_start(const char *a, size_t l)
{
    size_t n = strlen(a);
    l = l < n ? l : n;
    if (l < n && a[l] != ' ' && (l == 0 || a[l - 1] == ' '))
        return l;
    while (l > 0 && a[l - 1] == ' ')
        l--;
    while (l > 0 && a[l - 1] != ' ')
        l--;
    return l;
}

static bool same_program(const struct gm_top_ent *a,
                         const struct gm_top_ent *b)
{
    size_t n = a->cmd_args - a->cmd_prog;
    return n == b->cmd_args - b->cmd_prog &&
           memcmp(a->cmd + a->cmd_prog, b->cmd + b->cmd_prog, n) == 0;
}

/* cmd_diff of each row: after the arguments it shares with the most
 * similar other row of the same program (identical ones apart). */
static void command_diffs(struct gm_top_ent *const *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct gm_top_ent *a = rows[i];
        const char *pa = a->cmd + a->cmd_args;
        size_t best = 0;
        for (size_t j = 0; j < n && n <= CMD_DIFF_MAX; j++) {
            const struct gm_top_ent *b = rows[j];
            const char *pb = b->cmd + b->cmd_args;
            if (j == i || !same_program(a, b) || strcmp(pa, pb) == 0)
                continue;
            size_t l = 0;
            while (pa[l] != '\0' && pa[l] == pb[l])
                l++;
            best = l > best ? l : best;
        }
        size_t w = best ? word_start(pa, best) : 0;
        a->cmd_diff = a->cmd_args + (w > 1 ? w : 0);
    }
}

static void build_rows(struct top *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nents; i++) {
        struct gm_top_ent *e = t->ents[i];
        struct gm_card k = gm_card_of(&e->d, e->dev);
        if (t->card_filter && (e->dev < 0 || !gm_card_same(&k, &t->card)))
            continue;
        if (t->m.text_filter[0] && strstr(e->cmd, t->m.text_filter) == NULL)
            continue;
        if (t->m.job_filter[0] && !gm_ident_match(&e->ident, t->m.job_filter))
            continue;
        t->rows[n++] = e;
    }
    /* The key line names the card shown, as its device line does. */
    const struct gm_top_devsum *c = filter_card(t);
    if (c != NULL)
        snprintf(t->m.dev_filter, sizeof t->m.dev_filter, "%s", c->label);
    bool any_job = false;
    for (size_t i = 0; i < t->nents && !any_job; i++)
        any_job = strcmp(t->ents[i]->job, "-") != 0;
    t->m.show_job = any_job || t->m.job_filter[0] != '\0';
    command_diffs(t->rows, n);
    sort_top = t;
    qsort(t->rows, n, sizeof t->rows[0], cmp_ent);
    t->m.rows = t->rows;
    t->m.nrows = n;
    t->m.devs = t->devs;
    t->m.ndevs = t->ndevs;
    t->m.groups = t->groups;
    t->m.ngroups = t->ngroups;
    if (t->m.selected >= n)
        t->m.selected = n ? n - 1 : 0;
}

/* ---- detail view --------------------------------------------------------------- */

static void detail_close(struct top *t)
{
    if (t->det == &t->det_own)
        gm_seg_close(&t->det_own);
    t->det = NULL;
    t->m.screen = GM_SCR_TABLE;
    t->m.detail = NULL;
}

/* The segment of the selected entry: opened anew while its file is there,
 * else the held one (a process gone since, its file unlinked). Reading
 * starts at the oldest event the ring still holds. */
static void detail_open(struct top *t)
{
    char err[256];
    if (t->m.nrows == 0)
        return;
    const struct gm_top_ent *e = t->rows[t->m.selected];
    t->det_pid = e->pid;
    t->det_pidns = e->pidns;
    t->det_dev = e->dev;
    t->det_start = e->start_ticks;
    t->nev = t->nref = 0;
    t->m.events_lost = 0;
    t->m.screen = GM_SCR_DETAIL;
    t->det = NULL;
    struct gm_seg_id id = { e->pid, e->pidns };
    if (gm_seg_open_id(&t->det_own, gm_tool_shm_dir(), t->prefix, &id, err,
                       sizeof err) == 0) {
        if (t->det_own.start_ticks == e->start_ticks)
            t->det = &t->det_own;
        else
            gm_seg_close(&t->det_own);
    }
    if (t->det == NULL) {
        struct held *h = find_held(t, e->pid, e->pidns, e->start_ticks);
        if (h == NULL)
            return;
        t->det = &h->seg;
    }
    gm_cursor_init(&t->det_cur, t->det, true);
    uint64_t cap = t->det->ring_capacity;
    t->det_cur.next = t->det_cur.next > cap ? t->det_cur.next - cap : 0;
}

static void keep_event(struct top *t, const struct gm_abi_record *r)
{
    if (r->dev != (uint32_t)t->det_dev && r->dev != GM_ABI_NO_DEVICE)
        return;
    if (t->nev == GM_TOP_EVENTS) {
        memmove(t->ev, t->ev + 1, (GM_TOP_EVENTS - 1) * sizeof t->ev[0]);
        t->nev--;
    }
    t->ev[t->nev++] = *r;
    if (r->kind != GM_EV_OOM)
        return;
    if (t->nref == GM_TOP_REFUSALS) {
        memmove(t->ref, t->ref + 1, (GM_TOP_REFUSALS - 1) * sizeof t->ref[0]);
        t->nref--;
    }
    t->ref[t->nref++] = *r;
}

static void detail_update(struct top *t)
{
    static struct gm_abi_record buf[256];
    t->m.detail = NULL;
    for (size_t i = 0; i < t->nents; i++) {
        const struct gm_top_ent *e = t->ents[i];
        if (e->pid == t->det_pid && e->pidns == t->det_pidns &&
            e->dev == t->det_dev &&
            e->start_ticks == t->det_start)
            t->m.detail = e;
    }
    if (t->m.detail == NULL) {
        detail_close(t);
        return;
    }
    /* Bounded by the ring: the first update reads all it holds. */
    unsigned rounds = t->det ? t->det->ring_capacity / 256 + 2 : 0;
    for (unsigned round = 0; round < rounds; round++) {
        uint64_t lost = 0;
        size_t n = gm_seg_drain(t->det, &t->det_cur, buf, 256,
                                t->m.detail->gone ? GM_DRAIN_FLUSH : 0, &lost);
        t->m.events_lost += lost;
        for (size_t k = 0; k < n; k++)
            keep_event(t, &buf[k]);
        if (n == 0 && lost == 0)
            break;
    }
    t->m.events = t->ev;
    t->m.nevents = t->nev;
    t->m.refusals = t->ref;
    t->m.nrefusals = t->nref;
}

/* ---- keys ---------------------------------------------------------------------- */

/* The device filter's next card, in the device lines' order; all after
 * the last one, or when the card shown is no longer listed. */
static void next_device(struct top *t)
{
    const struct gm_top_devsum *c = filter_card(t);
    size_t next = !t->card_filter ? 0
                  : c != NULL ? (size_t)(c - t->devs) + 1 : t->ndevs;
    t->card_filter = next < t->ndevs;
    t->m.dev_filter[0] = '\0';
    if (t->card_filter) {
        t->card = card_of_sum(&t->devs[next]);
        snprintf(t->m.dev_filter, sizeof t->m.dev_filter, "%s",
                 t->devs[next].label);
    }
    t->m.selected = 0;
}

/* The job filter's next value: the label of the next job listed, in
 * label order, after the current one; "" (all) after the last. */
static void next_job(struct top *t)
{
    const char *best = NULL;
    for (size_t i = 0; i < t->nents; i++) {
        const char *j = t->ents[i]->job;
        if (strcmp(j, "-") == 0 || strcmp(j, t->m.job_filter) <= 0)
            continue;
        if (best == NULL || strcmp(j, best) < 0)
            best = j;
    }
    snprintf(t->m.job_filter, sizeof t->m.job_filter, "%s",
             best != NULL ? best : "");
    t->m.selected = 0;
}

static void edit_key(struct top *t, int k)
{
    size_t n = strlen(t->m.text_filter);
    if (k == '\n' || k == KEY_ENTER) {
        t->m.editing = false;
    } else if (k == 27) {
        t->m.editing = false;
        t->m.text_filter[0] = '\0';
    } else if ((k == KEY_BACKSPACE || k == 127 || k == 8) && n > 0) {
        t->m.text_filter[n - 1] = '\0';
    } else if (k >= 32 && k < 127 && n + 1 < sizeof t->m.text_filter) {
        t->m.text_filter[n] = (char)k;
        t->m.text_filter[n + 1] = '\0';
    }
}

/* Returns false to quit. */
static bool handle_key(struct top *t, int k)
{
    if (t->m.editing) {
        edit_key(t, k);
        return true;
    }
    if (k == 'q' || k == 'Q')
        return false;
    if (t->m.screen == GM_SCR_HELP) {   /* any other key returns */
        t->m.screen = t->m.detail ? GM_SCR_DETAIL : GM_SCR_TABLE;
        return true;
    }
    if (t->m.screen == GM_SCR_DETAIL) {
        if (k == 27 || k == KEY_LEFT || k == KEY_BACKSPACE || k == 127)
            detail_close(t);
        else if (k == 'h' || k == '?')
            t->m.screen = GM_SCR_HELP;
        return true;
    }
    switch (k) {
    case 's':
        t->m.sort = (enum gm_top_col)((t->m.sort + 1) % GM_COL_COUNT);
        if (t->m.sort == GM_COL_JOB && !t->m.show_job)
            t->m.sort = (enum gm_top_col)(GM_COL_JOB + 1);
        break;
    case 'S': t->m.desc = !t->m.desc; break;
    case 'd': next_device(t); break;
    case 'j': next_job(t); break;
    case '/': t->m.editing = true; break;
    case 'h': case '?': t->m.screen = GM_SCR_HELP; break;
    case KEY_UP: if (t->m.selected > 0) t->m.selected--; break;
    case KEY_DOWN:
        if (t->m.selected + 1 < t->m.nrows)
            t->m.selected++;
        break;
    case '\n': case '\r': case KEY_ENTER: detail_open(t); break;
    default: break;
    }
    return true;
}

/* ---- modes --------------------------------------------------------------------- */

static int run_interactive(struct top *t)
{
    /* Not a terminal on both sides: curses would draw into a file or a
     * pipe, and with standard input at its end every wait for a key
     * returns at once, a loop at full CPU that never ends. */
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "gpumem: top: standard %s is not a terminal; the "
                "interactive view needs one (use --once or --json for a "
                "file or a pipe)\n",
                !isatty(STDIN_FILENO) ? "input" : "output");
        return 1;
    }
    if (gm_view_open() != 0) {
        fprintf(stderr, "gpumem: top: cannot set up the terminal\n");
        return 1;
    }
    long done = 0;
    int rc = 0;
    bool quit = false;
    while (!quit && !stop_flag) {
        if (collect(t) != 0) {
            rc = 1;
            break;
        }
        done++;
        uint64_t next = gm_clock_monotonic_ns() + (uint64_t)(t->delay * 1e9);
        for (;;) {
            build_rows(t);
            if (t->m.screen != GM_SCR_TABLE && t->m.screen != GM_SCR_HELP)
                detail_update(t);
            gm_view_draw(&t->m);
            uint64_t now = gm_clock_monotonic_ns();
            if (now >= next || stop_flag || quit)
                break;
            int k = gm_view_key((int)((next - now) / 1000000) + 1);
            if (k != ERR && k != KEY_RESIZE && !handle_key(t, k))
                quit = true;
        }
        if (t->iters && done >= t->iters)
            break;
    }
    detail_close(t);
    for (size_t i = 0; i < MAX_HELD; i++)
        release(t, &t->held[i]);
    gm_view_close();
    return rc;
}

/* "ordinals":[0,1]: those the card is seen as. */
static void json_ordinals(FILE *f, uint64_t ordinals)
{
    bool first = true;
    fputs(",\"ordinals\":[", f);
    for (unsigned o = 0; o < GM_ABI_MAX_DEVICES; o++)
        if (ordinals & (1ull << o)) {
            fprintf(f, "%s%u", first ? "" : ",", o);
            first = false;
        }
    fputc(']', f);
}

static void json_card(FILE *f, const struct gm_top_devsum *c)
{
    char uuid[48];
    fprintf(f, "{\"device\":%d,\"uuid\":", c->dev);
    if (gm_uuid_recorded(c->uuid)) {
        gm_uuid_full(c->uuid, uuid, sizeof uuid);
        gm_json_str(f, uuid);
    } else {
        fputs("null", f);
    }
    json_ordinals(f, c->ordinals);
    /* Sizes as KEY_bytes; the unit-less keys are kept one release (and
     * "limits" in its earlier form: the sum of the limits there are). A
     * process with no limit makes the sum no bound: limits_bytes null. */
    fprintf(f, ",\"physical_bytes\":%llu,\"limits_bytes\":",
            (unsigned long long)c->physical);
    if (c->unlimited)
        fputs("null", f);
    else
        fprintf(f, "%llu", (unsigned long long)c->limits);
    fprintf(f, ",\"used_bytes\":%llu,\"physical\":%llu,\"limits\":%llu,"
            "\"used\":%llu,\"processes\":%u,\"unlimited_processes\":%u}",
            (unsigned long long)c->used, (unsigned long long)c->physical,
            (unsigned long long)c->limits, (unsigned long long)c->used,
            c->procs, c->unlimited);
}

/* "devices": one object per card the running processes use, as the
 * device lines of the interactive view. */
static void json_devices(FILE *f, const struct gm_scan *sc)
{
    static struct gm_top_devsum cards[GM_TOP_CARDS];
    size_t n = 0;
    for (size_t i = 0; i < sc->n; i++) {
        const struct gm_snapshot *s = &sc->procs[i].p.snap;
        if (sc->procs[i].p.state != GM_SEG_ALIVE)
            continue;
        for (unsigned k = 0; k < s->dev_count && k < GM_ABI_MAX_DEVICES; k++)
            if (s->dev[k].present)
                card_add(cards, &n, GM_TOP_CARDS, (int)k, &s->dev[k]);
    }
    cards_finish(cards, n);
    fputs("\"devices\":[", f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        json_card(f, &cards[i]);
    }
    fputc(']', f);
}

static int run_batch(struct top *t)
{
    static struct gm_row rows[MAX_ENTS];
    for (long i = 0; !stop_flag && (t->iters == 0 || i < t->iters); i++) {
        struct gm_scan sc;
        struct gm_gscan gs;
        if (i > 0) {
            struct timespec ts = { (time_t)t->delay,
                                   (long)((t->delay - (double)(time_t)t->delay)
                                          * 1e9) };
            nanosleep(&ts, NULL);
        }
        if (gm_scan_job(t->prefix, 0, t->m.job_filter[0] ? t->m.job_filter
                                                        : NULL, &sc) < 0)
            return 1;
        if (gm_gscan(t->prefix, 0, &gs) < 0) {
            gm_scan_free(&sc);
            return 1;
        }
        if (t->json) {
            printf("{\"time_ns\":%llu,\"prefix\":",
                   (unsigned long long)gm_clock_realtime_ns());
            gm_json_str(stdout, t->prefix);
            putchar(',');
            json_devices(stdout, &sc);
            fputs(",\"processes\":", stdout);
            gm_scan_print_json(stdout, &sc, 0); /* no leak: see trendcol.h */
            fputs(",\"groups\":", stdout);
            gm_gscan_print_json(stdout, &gs);
            fputs("}\n", stdout);
        } else {
            gm_rows_print_text(stdout, rows, gm_scan_rows(&sc, rows,
                                                          MAX_ENTS));
            gm_gscan_print_text(stdout, &gs);
        }
        gm_gscan_free(&gs);
        gm_scan_free(&sc);
        if (fflush(stdout) != 0)
            return 1;
        if (t->once)
            break;
    }
    return 0;
}

/* ---- options ------------------------------------------------------------------- */

static int bad(const char *what, const char *v)
{
    fprintf(stderr, "gpumem: top: %s '%s'; usage: gpumem-top [-d SECONDS] "
            "[-n N] [--once | --json] [--job J] [--prefix P] (gpumem-top "
            "--help)\n",
            what, v);
    return -1;
}

/* One option at argv[*i]: 1 when taken (a value, if any, consumed), 0
 * when it is no option of ours, -1 when it was wrong (message printed).
 * The same rules as the gpumem subcommands' (tools/lib/util.h): a flag
 * takes no "=VALUE", an option's value may follow or be given after
 * '=', and "--" is never a value. */
static int parse_one(struct top *t, int argc, char **argv, int *i,
                     const char **popt)
{
    const char *a = argv[*i], *v = NULL;
    double d;
    uint64_t n;
    int r;
    if ((r = gm_opt_flag("top", a, "--once")) != 0) {
        t->once = true;
        return r;
    }
    if ((r = gm_opt_flag("top", a, "--json")) != 0) {
        t->json = true;
        return r;
    }
    if ((r = gm_opt_value("top", argc, argv, i, "--prefix", popt)) != 0)
        return r;
    if ((r = gm_opt_value("top", argc, argv, i, "--job", &v)) != 0) {
        if (r < 0)
            return r;
        if (v[0] == '\0' || strlen(v) >= sizeof t->m.job_filter)
            return bad("--job needs a job of 1 to 63 characters, not", v);
        snprintf(t->m.job_filter, sizeof t->m.job_filter, "%s", v);
        return 1;
    }
    if ((r = gm_opt_value("top", argc, argv, i, "-d", &v)) != 0 ||
        (r = gm_opt_value("top", argc, argv, i, "--delay", &v)) != 0) {
        if (r < 0)
            return r;
        if (gm_parse_number(v, &d) != 0 || d < 0.1 || d > 3600)
            return bad("-d needs seconds from 0.1 to 3600, not", v);
        t->delay = d;
        return 1;
    }
    if ((r = gm_opt_value("top", argc, argv, i, "-n", &v)) != 0 ||
        (r = gm_opt_value("top", argc, argv, i, "--iterations", &v)) != 0) {
        if (r < 0)
            return r;
        if (gm_parse_uint(v, &n) != 0 || n == 0 || n > 1u << 30)
            return bad("-n needs a positive count, not", v);
        t->iters = (long)n;
        return 1;
    }
    return 0;
}

static int parse_args(struct top *t, int argc, char **argv)
{
    const char *popt = NULL;
    for (int i = 1; i < argc; i++) {
        int r = parse_one(t, argc, argv, &i, &popt);
        if (r < 0)
            return -1;
        if (r == 0)
            return bad(argv[i][0] == '-' ? "unknown option"
                                         : "unexpected argument",
                       argv[i]);
    }
    if (t->once && t->json)
        return bad("choose one of --once and --json, not both:", "--once");
    t->prefix = gm_tool_prefix("top", popt);
    return t->prefix ? 0 : -1;
}

int main(int argc, char **argv)
{
    static struct top t;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(help_text, stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("gpumem-top %s\n", GM_VERSION);
            return 0;
        }
    t.delay = 1.0;
    t.m.sort = GM_COL_USED;
    t.m.desc = true;
    if (parse_args(&t, argc, argv) != 0)
        return 2;
    t.m.prefix = t.prefix;
    t.m.delay_s = t.delay;
    signal(SIGINT, on_stop);
    signal(SIGTERM, on_stop);
    signal(SIGHUP, on_stop);
    int rc = t.once || t.json ? run_batch(&t) : run_interactive(&t);
    for (size_t i = 0; i < t.nents; i++)
        free(t.ents[i]);
    return rc;
}
