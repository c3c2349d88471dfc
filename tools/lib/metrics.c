/*
 * tools/lib/metrics.c — one scrape (see tools/lib/metrics.h): the group
 * files, then every process segment of the prefix, each family's samples
 * collected in its own buffer and the families joined in table order.
 *
 * Invariants: one snapshot buffer and one group view are reused for the
 * whole scrape (memory is the text, the sums of at most 128 cards, plus a
 * few hundred bytes per process for the HAMi rows and the labels seen,
 * and 17 bytes per segment listed); every
 * segment is closed before the next is opened; a device is exported only
 * when its copy is consistent (GM_SNAP_OK), a group only when its copy
 * was taken between two updates, so no torn figure reaches a time
 * series; no label set is written twice (a process whose labels
 * equal an earlier one's is skipped); the node-level device sums count
 * only writers that are alive, and are per physical card, keyed by the
 * UUID each process recorded for the ordinal it sees (the ordinal only
 * when none was: tools/lib/card.h), so processes that call different
 * cards device 0 are never summed together.
 */
#include "tools/lib/metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/policy.h"
#include "shim/base/clock.h"
#include "shim/group/group.h"
#include "tools/lib/card.h"
#include "tools/lib/leak.h"
#include "tools/lib/reader.h"
#include "tools/lib/util.h"

#define COMMAND_LABEL_MAX 64     /* bytes of the command label */

enum fam {
    F_INFO, F_START, F_USED, F_PEAK, F_LIMIT, F_CONTEXT, F_POOL,
    F_LIVE_ALLOCS, F_LIVE_BYTES, F_ALLOCS, F_FREES, F_REFUSED, F_SPILLS,
    F_SPILLED, F_OVER, F_ALLOCATED, F_CTX_FREED, F_FRAG, F_FRAG_PEAK, F_GROWTH, F_TO_LIMIT,
    F_LAT, F_EVENTS,
    F_LOST, F_PINNED,
    F_DEV_PHYS, F_DEV_USED, F_DEV_PROCS,
    F_G_USED, F_G_PEAK, F_G_LIMIT, F_G_MEMBERS,
    F_H_USED, F_H_LIMIT,
    F_SEGS, F_GROUPS, F_ERRS, F_DUR,
    F_COUNT
};

#define G GM_EXPO_GAUGE
#define C GM_EXPO_COUNTER
static const struct gm_expo_family fams[F_COUNT] = {
    [F_INFO] = { "gpumem_process_info", GM_EXPO_INFO, NULL,
        "A process with a gpumem segment: its identity and policy" },
    [F_START] = { "gpumem_process_start_time_seconds", G, "seconds",
        "Process start time, seconds since the epoch" },
    [F_USED] = { "gpumem_used_bytes", G, "bytes",
        "Device memory charged to the process now" },
    [F_PEAK] = { "gpumem_peak_bytes", G, "bytes",
        "High-water mark of device memory held by the process" },
    [F_LIMIT] = { "gpumem_limit_bytes", G, "bytes",
        "Device memory limit of the process (absent: no limit)" },
    [F_CONTEXT] = { "gpumem_context_bytes", G, "bytes",
        "Context memory measured and charged on the device" },
    [F_POOL] = { "gpumem_pool_reserve_bytes", G, "bytes",
        "Bytes held by the process's stream-ordered memory pools" },
    [F_LIVE_ALLOCS] = { "gpumem_live_allocations", G, NULL,
        "Allocations charged and not yet released" },
    [F_LIVE_BYTES] = { "gpumem_live_bytes", G, "bytes",
        "Bytes of the allocations not yet released" },
    [F_ALLOCS] = { "gpumem_allocations_total", C, NULL,
        "Allocations charged to the device" },
    [F_FREES] = { "gpumem_frees_total", C, NULL,
        "Releases of charged allocations" },
    [F_REFUSED] = { "gpumem_refused_total", C, NULL,
        "Requests refused at the limit (out of memory returned)" },
    [F_SPILLS] = { "gpumem_spills_total", C, NULL,
        "Refused requests served as managed memory (on_oom=spill)" },
    [F_SPILLED] = { "gpumem_spilled_bytes_total", C, NULL,
        "Bytes of the requests served as managed memory" },
    [F_OVER] = { "gpumem_over_limit_total", C, NULL,
        "Requests allowed past the limit (on_oom=warn)" },
    [F_ALLOCATED] = { "gpumem_allocated_bytes_total", C, NULL,
        "Sum of the sizes of all allocations charged" },
    [F_CTX_FREED] = { "gpumem_context_freed_bytes_total", C, NULL,
        "Bytes of allocations the program never freed that the driver "
        "freed with their context" },
    [F_FRAG] = { "gpumem_fragmentation_ratio", G, "ratio",
        "External fragmentation at the last sync point (docs/metrics.md), 0..1" },
    [F_FRAG_PEAK] = { "gpumem_fragmentation_at_peak_ratio", G, "ratio",
        "External fragmentation when the peak was last reached, 0..1" },
    [F_GROWTH] = { "gpumem_growth_bytes_per_second", G, "bytes_per_second",
        "Growth of the used floor, fitted over the history (only while "
        "growing: the leak verdict)" },
    [F_TO_LIMIT] = { "gpumem_seconds_to_limit", G, NULL,
        "Forecast seconds until the limit is reached at that growth" },
    [F_LAT] = { "gpumem_alloc_latency_seconds", GM_EXPO_HISTOGRAM, "seconds",
        "Driver time of each allocation (log2 buckets)" },
    [F_EVENTS] = { "gpumem_events_total", C, NULL,
        "Events written to the process's event ring" },
    [F_LOST] = { "gpumem_events_lost_total", C, NULL,
        "Events the ring no longer holds: overwritten or dropped" },
    [F_PINNED] = { "gpumem_host_pinned_bytes", G, "bytes",
        "Page-locked host memory held by the process (not charged)" },
    [F_DEV_PHYS] = { "gpumem_device_physical_bytes", G, "bytes",
        "Physical memory of the card as its processes' driver reports it" },
    [F_DEV_USED] = { "gpumem_device_used_bytes", G, "bytes",
        "Device memory charged on the card, summed over the live processes" },
    [F_DEV_PROCS] = { "gpumem_device_processes", G, NULL,
        "Live processes that used the card" },
    [F_G_USED] = { "gpumem_group_used_bytes", G, "bytes",
        "Device memory charged to a shared budget, all members" },
    [F_G_PEAK] = { "gpumem_group_peak_bytes", G, "bytes",
        "High-water mark of a shared budget's charge" },
    [F_G_LIMIT] = { "gpumem_group_limit_bytes", G, "bytes",
        "Limit of a shared budget on the device (absent: none)" },
    [F_G_MEMBERS] = { "gpumem_group_members", G, NULL,
        "Members of a shared budget, live or dead and not reclaimed" },
    [F_H_USED] = { "hami_vgpu_memory_used_bytes", G, "bytes",
        "HAMi-compatible: device memory used by a container" },
    [F_H_LIMIT] = { "hami_vgpu_memory_limit_bytes", G, "bytes",
        "HAMi-compatible: device memory limit of a container" },
    [F_SEGS] = { "gpumem_scrape_segments", G, NULL,
        "Process segments exported by this scrape" },
    [F_GROUPS] = { "gpumem_scrape_groups", G, NULL,
        "Group files exported by this scrape" },
    [F_ERRS] = { "gpumem_scrape_errors_total", C, NULL,
        "Segments, device blocks or group files skipped since the "
        "exporter started" },
    [F_DUR] = { "gpumem_scrape_duration_seconds", G, "seconds",
        "Time this scrape took to read every segment" },
};
#undef G
#undef C

static const char *const reason_names[GM_MX_NREASONS] = {
    "unreadable", "invalid", "faulted", "inconsistent", "limit", "timeout",
    "duplicate",
};

const char *gm_mx_reason_name(enum gm_mx_reason r)
{
    return (unsigned)r < GM_MX_NREASONS ? reason_names[r] : "?";
}

void gm_metrics_opts_default(struct gm_metrics_opts *o)
{
    memset(o, 0, sizeof *o);
    o->dir = gm_tool_shm_dir();
    o->prefix = "gpumem";
    o->max_segments = 4096;
    o->timeout_ns = 5000000000ull;
    o->max_bytes = 64u << 20;
}

/* ---- scrape state -------------------------------------------------------- */

/* A group member: its pid in its own pid namespace, that namespace as
 * segment names carry it (0: the initial one), whether it is known. */
struct member {
    int pid;
    uint64_t start_ticks, pidns;
    bool ns_known;
    unsigned group;
};

/* The node-level sums of one physical device (card), over the live
 * processes that use it, whatever ordinal each sees it as. */
struct devsum {
    struct gm_card card;
    uint64_t physical, used, procs;
};

#define MX_CARDS (2 * GM_ABI_MAX_DEVICES) /* cards summed per scrape */

struct hami_row {
    char key[GM_ID_NS_LEN + GM_ID_POD_LEN + GM_ID_CTR_LEN + 40];
                                 /* namespace, pod, container labels */
    unsigned dev;
    uint64_t used, limit;
    char uuid[48];               /* the device's, "" when not recorded */
};

/* The labels of a process already exported by the scrape. */
struct seen {
    uint64_t hash;
    char *labels;
};

struct scrape {
    const struct gm_metrics_opts *o;
    enum gm_expo_fmt fmt;
    struct gm_expo_buf fam[F_COUNT];
    unsigned skipped[GM_MX_NREASONS];
    char (*gname)[GM_NAME_MAX + 1];
    unsigned ngroups;
    struct member *members;
    size_t nmembers, cap_members;
    struct devsum cards[MX_CARDS];
    size_t ncards;
    struct hami_row *hami;
    size_t nhami, cap_hami;
    struct seen *seen;
    size_t nseen, cap_seen;
    struct gm_expo_buf lab;      /* labels being built */
    char le[GM_ABI_LAT_BUCKETS][32]; /* `le="..."` of each bucket, once */
    size_t text;                 /* bytes in all family buffers */
    bool oom;
    /* The process being read: each device's verdict from its history. */
    bool grows[GM_ABI_MAX_DEVICES];
    double growth[GM_ABI_MAX_DEVICES], to_limit[GM_ABI_MAX_DEVICES];
};

static struct gm_expo_buf *fam(struct scrape *s, enum fam f)
{
    return &s->fam[f];
}

static size_t text_len(const struct scrape *s)
{
    size_t n = 0;
    for (int f = 0; f < F_COUNT; f++)
        n += s->fam[f].len;
    return n;
}

static bool any_failed(const struct scrape *s)
{
    for (int f = 0; f < F_COUNT; f++)
        if (s->fam[f].failed)
            return true;
    return s->lab.failed;
}

/* ---- groups ---------------------------------------------------------------- */

static void add_member(struct scrape *s, int pid, uint64_t ticks,
                       uint64_t group_pidns, unsigned g)
{
    if (s->nmembers == s->cap_members) {
        size_t cap = s->cap_members ? s->cap_members * 2 : 64;
        void *p = realloc(s->members, cap * sizeof *s->members);
        if (p == NULL) {
            s->oom = true;
            return;
        }
        s->members = p;
        s->cap_members = cap;
    }
    s->members[s->nmembers++] = (struct member){
        pid, ticks, group_pidns == GM_PIDNS_INIT ? 0 : group_pidns,
        group_pidns != 0, g };
}

static void group_series(struct scrape *s, const struct gm_group_view *v)
{
    struct gm_expo_buf *lab = &s->lab;
    for (unsigned d = 0; d < v->ndev && d < GM_GROUP_MAX_DEVICES; d++) {
        const struct gm_group_view_dev *gd = &v->dev[d];
        if (!gd->present)
            continue;
        char uuid[48], dev[16];
        gm_uuid_full(gd->uuid, uuid, sizeof uuid);
        snprintf(dev, sizeof dev, "%u", d);
        lab->len = 0;
        gm_expo_label(lab, false, "group", v->name, 0);
        gm_expo_label(lab, true, "group_device", dev, 0);
        gm_expo_label(lab, true, "uuid", uuid, 0);
        gm_expo_sample_u64(fam(s, F_G_USED), fams[F_G_USED].name, NULL,
                           lab->p, NULL, gd->used);
        gm_expo_sample_u64(fam(s, F_G_PEAK), fams[F_G_PEAK].name, NULL,
                           lab->p, NULL, gd->peak);
        if (gd->limit)
            gm_expo_sample_u64(fam(s, F_G_LIMIT), fams[F_G_LIMIT].name, NULL,
                               lab->p, NULL, gd->limit);
    }
    static const char *const st[2] = { "live", "dead" };
    unsigned n[2] = { gm_group_live_members(v), gm_group_dead_members(v) };
    for (int i = 0; i < 2; i++) {
        lab->len = 0;
        gm_expo_label(lab, false, "group", v->name, 0);
        gm_expo_label(lab, true, "state", st[i], 0);
        gm_expo_sample_u64(fam(s, F_G_MEMBERS), fams[F_G_MEMBERS].name,
                           NULL, lab->p, NULL, n[i]);
    }
}

/* Reads every group file: its series, and its members for the process
 * label "group". A copy never taken between two updates gives no series
 * (counted "inconsistent"), only its members: each slot's pid and start
 * time name a process that is or was a member. Returns the number of
 * groups exported. */
static unsigned read_groups(struct scrape *s)
{
    struct gm_gpaths gp;
    unsigned exported = 0;
    if (gm_group_paths(s->o->dir, s->o->prefix, &gp) < 0)
        return 0;
    struct gm_group_view *v = malloc(sizeof *v);
    s->gname = calloc(gp.n ? gp.n : 1, sizeof s->gname[0]);
    if (v == NULL || s->gname == NULL) {
        free(v);
        free(gp.path);
        s->oom = true;
        return 0;
    }
    for (size_t i = 0; i < gp.n; i++) {
        struct stat st;
        char err[512];
        if (lstat(gp.path[i], &st) != 0)
            continue;   /* removed since listed: the last member left */
        if (!S_ISREG(st.st_mode) ||
            gm_group_snapshot(gp.path[i], v, err, sizeof err) != 0) {
            s->skipped[errno == EACCES ? GM_MX_UNREADABLE : GM_MX_INVALID]++;
            continue;
        }
        unsigned g = s->ngroups++;
        snprintf(s->gname[g], sizeof s->gname[g], "%s", v->name);
        for (unsigned m = 0; m < v->nmembers && m < GM_GROUP_MAX_MEMBERS; m++)
            add_member(s, v->member[m].pid, v->member[m].start_ticks,
                       v->pidns, g);
        if (v->consistent) {
            group_series(s, v);
            exported++;
        } else {
            s->skipped[GM_MX_INCONSISTENT]++;
        }
    }
    free(v);
    free(gp.path);
    return exported;
}

static const char *group_of(const struct scrape *s, int pid, uint64_t pidns,
                            uint64_t ticks)
{
    for (size_t i = 0; i < s->nmembers; i++) {
        const struct member *m = &s->members[i];
        if (m->pid == pid && (!m->ns_known || m->pidns == pidns) &&
            (m->start_ticks == 0 || ticks == 0 || m->start_ticks == ticks))
            return s->gname[m->group];
    }
    return NULL;
}

/* ---- processes ------------------------------------------------------------- */

/* "trainsim --steps 10" from "/opt/bin/trainsim --steps 10": the program's
 * base name and its arguments (the label is cut to 64 bytes). */
static const char *short_command(const char *cmd)
{
    const char *end = strchr(cmd, ' ');
    if (end == NULL)
        end = cmd + strlen(cmd);
    const char *base = cmd;
    for (const char *p = cmd; p < end; p++)
        if (*p == '/' && p + 1 < end)
            base = p + 1;
    return base;
}

/* The job user: Slurm's when the writer recorded one, else the name of
 * the segment's owner. */
static const char *job_user(const struct gm_scan_proc *sp, char *buf,
                            size_t cap)
{
    const struct gm_abi_ident *id = &sp->p.snap.ident;
    if (id->job_user[0])
        return id->job_user;
    return gm_user_name(sp->p.uid, buf, cap);
}

static void label_if(struct gm_expo_buf *lab, const char *name,
                     const char *v)
{
    if (v[0])
        gm_expo_label(lab, true, name, v, 0);
}

/* The labels every series of the process carries: pid (in this reader's
 * pid namespace; "~N" when a container's process is gone and only its
 * own pid N is known, then with its pidns so that two such never share
 * a series), command, mode, group, and the job identity that was
 * recorded (absent labels: not recorded). */
static void proc_labels(struct scrape *s, const struct gm_scan_proc *sp,
                        const char *group)
{
    struct gm_expo_buf *lab = &s->lab;
    const struct gm_abi_ident *id = &sp->p.snap.ident;
    char pid[24], user[GM_ID_USER_LEN + 8];
    gm_proc_pid_text(&sp->p, pid, sizeof pid);
    lab->len = 0;
    gm_expo_label(lab, false, "pid", pid, 0);
    if (gm_proc_shown_pid(&sp->p) == 0) {
        /* "~N" is unique only within its pid namespace. */
        char ns[24];
        snprintf(ns, sizeof ns, "%llu", (unsigned long long)sp->p.pidns);
        gm_expo_label(lab, true, "pidns", ns, 0);
    }
    gm_expo_label(lab, true, "command", short_command(sp->p.snap.cmdline),
                  COMMAND_LABEL_MAX);
    gm_expo_label(lab, true, "mode",
                  gm_mode_name((enum gm_mode)sp->p.snap.mode), 0);
    if (group != NULL)
        gm_expo_label(lab, true, "group", group, 0);
    gm_expo_label(lab, true, "user", job_user(sp, user, sizeof user), 0);
    label_if(lab, "job", id->job_id);
    label_if(lab, "step", id->step_id);
    label_if(lab, "namespace", id->pod_namespace);
    label_if(lab, "pod", id->pod_name);
    label_if(lab, "container", id->container_name);
}

static void hami_add(struct scrape *s, const struct gm_abi_ident *id,
                     unsigned dev, const struct gm_abi_dev *d)
{
    /* One row per container and device: the processes of a container
     * add up (HAMi's own rule), the largest limit stands for them. A
     * process outside a pod has empty names, as in HAMi. */
    struct gm_expo_buf *lab = &s->lab;
    lab->len = 0;
    gm_expo_label(lab, false, "namespace", id->pod_namespace, 0);
    gm_expo_label(lab, true, "pod", id->pod_name, 0);
    gm_expo_label(lab, true, "container", id->container_name, 0);
    const char *key = lab->p;
    uint64_t used = d->used, limit = d->limit;
    for (size_t i = 0; i < s->nhami; i++)
        if (s->hami[i].dev == dev && strcmp(s->hami[i].key, key) == 0) {
            s->hami[i].used += used;
            if (limit > s->hami[i].limit)
                s->hami[i].limit = limit;
            if (s->hami[i].uuid[0] == '\0')
                gm_dev_uuid(d, s->hami[i].uuid, sizeof s->hami[i].uuid);
            return;
        }
    if (s->nhami == s->cap_hami) {
        size_t cap = s->cap_hami ? s->cap_hami * 2 : 16;
        void *p = realloc(s->hami, cap * sizeof *s->hami);
        if (p == NULL) {
            s->oom = true;
            return;
        }
        s->hami = p;
        s->cap_hami = cap;
    }
    struct hami_row *r = &s->hami[s->nhami++];
    snprintf(r->key, sizeof r->key, "%s", key);
    r->dev = dev;
    r->used = used;
    r->limit = limit;
    gm_dev_uuid(d, r->uuid, sizeof r->uuid);
}

static void latency(struct scrape *s, const char *labels,
                    const struct gm_abi_dev *d)
{
    struct gm_expo_buf *b = fam(s, F_LAT);
    const char *name = fams[F_LAT].name;
    uint64_t cum = 0;
    for (unsigned i = 0; i + 1 < GM_ABI_LAT_BUCKETS; i++) {
        cum += d->lat_hist[i];
        gm_expo_sample_u64(b, name, "_bucket", labels, s->le[i], cum);
    }
    cum += d->lat_hist[GM_ABI_LAT_BUCKETS - 1];
    gm_expo_sample_u64(b, name, "_bucket", labels, "le=\"+Inf\"", cum);
    gm_expo_sample_f(b, name, "_sum", labels, NULL,
                     (double)d->lat_sum_ns * 1e-9);
    gm_expo_sample_u64(b, name, "_count", labels, NULL, cum);
}

/* Adds a live process's block on ordinal dv to the sums of its card; a
 * block past MX_CARDS cards is left out of the sums and counted
 * (reason "limit"), so the node-level series stay bounded. */
static void card_add(struct scrape *s, int dv, const struct gm_abi_dev *d)
{
    struct gm_card key = gm_card_of(d, dv);
    size_t k = 0;
    while (k < s->ncards && !gm_card_same(&s->cards[k].card, &key))
        k++;
    if (k == s->ncards) {
        if (k == MX_CARDS) {
            s->skipped[GM_MX_LIMIT]++;
            return;
        }
        s->cards[k] = (struct devsum){ .card = key };
        s->ncards++;
    }
    struct devsum *ds = &s->cards[k];
    ds->used += d->used;
    ds->procs++;
    if (d->physical > ds->physical)
        ds->physical = d->physical;
}

#define U(F, v) gm_expo_sample_u64(fam(s, F), fams[F].name, NULL, L, NULL, (v))
#define D(F, v) gm_expo_sample_f(fam(s, F), fams[F].name, NULL, L, NULL, (v))

static void device_series(struct scrape *s, const struct gm_scan_proc *sp,
                          unsigned dv, const char *plabels)
{
    const struct gm_abi_dev *d = &sp->p.snap.dev[dv];
    struct gm_expo_buf *lab = &s->lab;
    char dev[16], uuid[48];
    snprintf(dev, sizeof dev, "%u", dv);
    gm_dev_uuid(d, uuid, sizeof uuid);
    lab->len = 0;
    gm_expo_puts(lab, plabels);
    gm_expo_label(lab, true, "device", dev, 0);
    if (uuid[0])
        gm_expo_label(lab, true, "uuid", uuid, 0);
    const char *L = lab->p;
    U(F_USED, d->used);
    U(F_PEAK, d->peak);
    if (d->limit)
        U(F_LIMIT, d->limit);
    U(F_CONTEXT, d->context_bytes);
    U(F_POOL, d->pool_reserve);
    U(F_LIVE_ALLOCS, d->live_allocs);
    U(F_LIVE_BYTES, d->live_bytes);
    U(F_ALLOCS, d->allocs);
    U(F_FREES, d->frees);
    U(F_REFUSED, d->refusals);
    U(F_SPILLS, d->spills);
    U(F_SPILLED, d->spilled_bytes);
    U(F_OVER, d->over_limit);
    U(F_ALLOCATED, d->total_bytes);
    U(F_CTX_FREED, d->ended_bytes);
    D(F_FRAG, (double)d->frag_ppm / 1e6);
    D(F_FRAG_PEAK, (double)d->frag_peak_ppm / 1e6);
    if (s->grows[dv]) {
        D(F_GROWTH, s->growth[dv]);
        if (s->to_limit[dv] == s->to_limit[dv]) /* not NaN */
            D(F_TO_LIMIT, s->to_limit[dv]);
    }
    latency(s, L, d);
    if (sp->p.state == GM_SEG_ALIVE) {
        card_add(s, (int)dv, d);
        if (s->o->hami)
            hami_add(s, &sp->p.snap.ident, dv, d);
    }
}

static uint64_t labels_hash(const char *p)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

/* Whether a process with these labels was exported by this scrape
 * already; if not, they are noted (false also when memory ran out). */
static bool seen_before(struct scrape *s, const char *labels)
{
    uint64_t h = labels_hash(labels);
    for (size_t i = 0; i < s->nseen; i++)
        if (s->seen[i].hash == h && strcmp(s->seen[i].labels, labels) == 0)
            return true;
    if (s->nseen == s->cap_seen) {
        size_t cap = s->cap_seen ? s->cap_seen * 2 : 64;
        void *p = realloc(s->seen, cap * sizeof *s->seen);
        if (p == NULL) {
            s->oom = true;
            return false;
        }
        s->seen = p;
        s->cap_seen = cap;
    }
    char *copy = strdup(labels);
    if (copy == NULL) {
        s->oom = true;
        return false;
    }
    s->seen[s->nseen++] = (struct seen){ h, copy };
    return false;
}

/* The info row: the process's labels and the whole identity, once. */
static void info_row(struct scrape *s, const struct gm_scan_proc *sp,
                     const char *plabels)
{
    const struct gm_snapshot *sn = &sp->p.snap;
    const struct gm_abi_ident *id = &sn->ident;
    struct gm_expo_buf *lab = &s->lab;
    char owner[64], uid[16], nspid[16], pidns[24];
    gm_user_name(sp->p.uid, owner, sizeof owner);
    snprintf(uid, sizeof uid, "%u", (unsigned)sp->p.uid);
    lab->len = 0;
    gm_expo_puts(lab, plabels);
    gm_expo_label(lab, true, "owner", owner, 0);
    gm_expo_label(lab, true, "uid", uid, 0);
    if (!sp->p.local) {
        snprintf(nspid, sizeof nspid, "%d", sp->p.pid);
        snprintf(pidns, sizeof pidns, "%llu",
                 (unsigned long long)sp->p.pidns);
        gm_expo_label(lab, true, "ns_pid", nspid, 0);
        if (gm_proc_shown_pid(&sp->p) != 0)
            gm_expo_label(lab, true, "pidns", pidns, 0);
    }
    label_if(lab, "pod_uid", id->pod_uid);
    label_if(lab, "container_id", id->container_id);
    label_if(lab, "runtime", id->runtime);
    gm_expo_label(lab, true, "state", gm_proc_state_word(sp), 0);
    gm_expo_label(lab, true, "on_oom",
                  gm_on_oom_name((enum gm_on_oom)sn->on_oom), 0);
    gm_expo_label(lab, true, "policy", sn->policy, 128);
    gm_expo_sample_u64(fam(s, F_INFO), fams[F_INFO].name, NULL, lab->p,
                       NULL, 1);
}

/* The series of one process; false (and counted) when a process with
 * the same labels was exported by this scrape already: two series with
 * one label set make a scraper reject the whole text. */
static bool process_series(struct scrape *s, const struct gm_scan_proc *sp)
{
    const struct gm_snapshot *sn = &sp->p.snap;
    const char *group = group_of(s, sp->p.pid, sp->p.pidns, sn->start_ticks);
    struct gm_expo_buf *lab = &s->lab;
    proc_labels(s, sp, group);
    if (seen_before(s, lab->p ? lab->p : "")) {
        s->skipped[GM_MX_DUPLICATE]++;
        return false;
    }
    char *plabels = strdup(lab->p ? lab->p : "");
    if (plabels == NULL) {
        s->oom = true;
        return false;
    }
    info_row(s, sp, plabels);
    const char *L = plabels;
    /* To the millisecond (the kernel's start time has 10 ms steps): a
     * double keeps every digit of it. */
    D(F_START, (double)(sn->start_realtime_ns / 1000000u) / 1e3);
    U(F_EVENTS, sn->ring_head);
    U(F_LOST, gm_snapshot_events_lost(sn));
    U(F_PINNED, sn->host_pinned);
    for (unsigned dv = 0; dv < sn->dev_count && dv < GM_ABI_MAX_DEVICES;
         dv++) {
        if (!gm_dev_used(&sn->dev[dv]))
            continue;
        if (sn->dev_state[dv] != GM_SNAP_OK) {
            s->skipped[GM_MX_INCONSISTENT]++;
            continue;
        }
        device_series(s, sp, dv, plabels);
    }
    free(plabels);
    return true;
}

/* The leak verdict of each device of a live process from its history
 * alone (tools/lib/leak.c; the ring is not read: a scrape stays cheap),
 * so growth and the forecast are exported only while a device grows. */
static void trends(struct scrape *s, const struct gm_seg *seg,
                   const struct gm_proc *p)
{
    memset(s->grows, 0, sizeof s->grows);
    if (p->state != GM_SEG_ALIVE)
        return;
    for (unsigned dv = 0; dv < p->snap.dev_count && dv < GM_ABI_MAX_DEVICES;
         dv++) {
        struct gm_leak l;
        char err[128];
        if (!gm_dev_used(&p->snap.dev[dv]))
            continue;
        if (gm_leak_of_seg(seg, &p->snap, dv, NULL, 0, 0, &l, err,
                           sizeof err) == 0 &&
            l.trend.verdict == GM_TREND_GROWS &&
            l.trend.bytes_per_second == l.trend.bytes_per_second) {
            s->grows[dv] = true;
            s->growth[dv] = l.trend.bytes_per_second;
            s->to_limit[dv] = l.trend.seconds_to_limit;
        }
        gm_leak_free(&l);
    }
}

/* Opens one segment; false when it cannot be, counted by reason unless
 * its writer removed it since the listing. */
static bool open_seg(struct scrape *s, const struct gm_seg_id *id,
                     struct gm_seg *seg)
{
    char err[256], path[512];
    if (gm_seg_open_id(seg, s->o->dir, s->o->prefix, id, err, sizeof err)
        == 0)
        return true;
    int e = errno;
    struct stat st;
    if (id->pidns)
        snprintf(path, sizeof path, "%s/%s.%d.ns%llu", s->o->dir,
                 s->o->prefix, id->pid, (unsigned long long)id->pidns);
    else
        snprintf(path, sizeof path, "%s/%s.%d", s->o->dir, s->o->prefix,
                 id->pid);
    if (lstat(path, &st) != 0 && errno == ENOENT)
        return false;   /* its writer exited since the listing */
    s->skipped[e == EACCES ? GM_MX_UNREADABLE : GM_MX_INVALID]++;
    return false;
}

/* Opens, copies and exports one segment; false when it was skipped. */
static bool read_process(struct scrape *s, const struct gm_seg_id *id,
                         const struct gm_locks *lm, struct gm_scan_proc *sp)
{
    struct gm_seg seg;
    if (!open_seg(s, id, &seg))
        return false;
    int r = gm_seg_summary_with(&seg, lm, &sp->p);
    snprintf(sp->path, sizeof sp->path, "%s", seg.path);
    if (r >= 0)
        trends(s, &seg, &sp->p);
    gm_seg_close(&seg);
    if (r < 0) {
        s->skipped[GM_MX_FAULTED]++;
        return false;
    }
    sp->kept = (sp->p.snap.flags & GM_ABI_F_KEPT) != 0;
    if (sp->p.state == GM_SEG_DEAD && !s->o->dead)
        return false;
    if (sp->p.state == GM_SEG_EXITED && !sp->kept)
        return false;   /* closed and about to be removed */
    return process_series(s, sp);
}

/* The order in which segments take the --max-segments slots: what will
 * be exported, live writers first. */
enum rank { R_LIVE, R_KEPT, R_DEAD, R_NONE };

/* A segment's rank from its header and its writer's liveness alone (a
 * few system calls: no snapshot, no history). R_NONE: not exported (dead
 * without --dead; one that cannot be opened is counted). */
static unsigned char rank_of(struct scrape *s, const struct gm_seg_id *id)
{
    struct gm_seg seg;
    if (!open_seg(s, id, &seg))
        return R_NONE;
    enum gm_seg_state st = gm_seg_state(&seg);
    gm_seg_close(&seg);
    if (st == GM_SEG_ALIVE)
        return R_LIVE;
    if (st == GM_SEG_EXITED)
        return R_KEPT;  /* closed and not kept: gone by the next look */
    return s->o->dead ? R_DEAD : R_NONE;
}

/* Ranks ids[0..n) until the deadline (those left count as timeout).
 * Returns how many were ranked. */
static size_t rank_all(struct scrape *s, const struct gm_seg_id *ids,
                       unsigned char *rank, size_t n, uint64_t deadline)
{
    for (size_t i = 0; i < n; i++) {
        if (gm_clock_monotonic_ns() > deadline) {
            s->skipped[GM_MX_TIMEOUT] += (unsigned)(n - i);
            return i;
        }
        rank[i] = rank_of(s, &ids[i]);
    }
    return n;
}

/* The ids to read into sel (at most max): rank by rank, in the listing's
 * (pid) order within one; the exportable ones past max count as limit.
 * Returns how many were chosen. */
static size_t choose(struct scrape *s, const struct gm_seg_id *ids,
                     const unsigned char *rank, size_t n,
                     struct gm_seg_id *sel, size_t max)
{
    size_t k = 0;
    for (unsigned r = R_LIVE; r < R_NONE; r++)
        for (size_t i = 0; i < n; i++) {
            if (rank[i] != r)
                continue;
            if (k < max)
                sel[k++] = ids[i];
            else
                s->skipped[GM_MX_LIMIT]++;
        }
    return k;
}

/* Segments looked at (header and liveness) to choose the max_segments
 * read: 16 times as many, at most 2^20 (16 MiB of ids). */
static size_t look_bound(unsigned max)
{
    size_t n = (size_t)max * 16u;
    return n < (1u << 20) ? n : (size_t)1 << 20;
}

/* Whether any of ids[0..n) was written in another pid namespace. */
static bool any_foreign(const struct gm_seg_id *ids, size_t n)
{
    uint64_t me = gm_reader_self_pidns();
    for (size_t i = 0; i < n; i++)
        if (ids[i].pidns != 0 ? ids[i].pidns != me
                              : me != 0 && me != GM_PIDNS_INIT)
            return true;
    return false;
}

/* More segments than slots: the max_segments to read into *sel (NULL
 * when memory ran out), the rest counted. Returns how many. */
static size_t select_ids(struct scrape *s, const struct gm_seg_id *ids,
                         size_t n, unsigned max, uint64_t deadline,
                         struct gm_seg_id **sel)
{
    unsigned char *rank = malloc(n);
    *sel = malloc((size_t)max * sizeof **sel);
    size_t k = 0;
    if (rank == NULL || *sel == NULL) {
        s->oom = true;
    } else {
        n = rank_all(s, ids, rank, n, deadline);
        k = choose(s, ids, rank, n, *sel, max);
    }
    free(rank);
    return k;
}

static unsigned read_processes(struct scrape *s, uint64_t deadline)
{
    unsigned max = s->o->max_segments ? s->o->max_segments : 1;
    size_t look = look_bound(max);
    struct gm_seg_id *ids = malloc(look * sizeof *ids), *sel = NULL;
    struct gm_scan_proc *sp = malloc(sizeof *sp);
    struct gm_locks lm = { NULL, 0, 0 };
    unsigned done = 0;
    if (ids == NULL || sp == NULL) {
        s->oom = true;
        goto out;
    }
    int listed = gm_reader_list_ids(s->o->dir, s->o->prefix, ids, look);
    if (listed < 0) {
        done = (unsigned)-1;
        goto out;
    }
    size_t n = (size_t)listed;
    if (n > look) {
        s->skipped[GM_MX_LIMIT] += (unsigned)(n - look);
        n = look;
    }
    const struct gm_seg_id *rd = ids;
    if (n > max) {
        n = select_ids(s, ids, n, max, deadline, &sel);
        rd = sel;
    }
    /* Writers of another pid namespace: one read of /proc/locks tells
     * their pids here (tools/lib/reader.h). */
    if (any_foreign(rd, n))
        (void)gm_locks_load(&lm, NULL);
    for (size_t i = 0; i < n; i++) {
        if (gm_clock_monotonic_ns() > deadline) {
            s->skipped[GM_MX_TIMEOUT] += (unsigned)(n - i);
            break;
        }
        if (text_len(s) > s->o->max_bytes) {
            s->skipped[GM_MX_LIMIT] += (unsigned)(n - i);
            break;
        }
        memset(sp, 0, sizeof *sp);
        done += read_process(s, &rd[i], &lm, sp);
    }
out:
    gm_locks_free(&lm);
    free(ids);
    free(sel);
    free(sp);
    return done;
}

/* ---- joining ----------------------------------------------------------------- */

/* Cards without a UUID first, by ordinal; then by UUID. */
static int cmp_card(const void *pa, const void *pb)
{
    const struct gm_card *a = &((const struct devsum *)pa)->card;
    const struct gm_card *b = &((const struct devsum *)pb)->card;
    bool ua = gm_uuid_recorded(a->uuid), ub = gm_uuid_recorded(b->uuid);
    if (ua != ub)
        return ua ? 1 : -1;
    if (!ua)
        return (a->dev > b->dev) - (a->dev < b->dev);
    return memcmp(a->uuid, b->uuid, sizeof a->uuid);
}

/* The node-level series, one set per card: labelled uuid="GPU-...", or
 * device="N" (the ordinal) for the blocks that recorded no UUID. */
static void device_sums(struct scrape *s)
{
    qsort(s->cards, s->ncards, sizeof s->cards[0], cmp_card);
    for (size_t i = 0; i < s->ncards; i++) {
        const struct devsum *ds = &s->cards[i];
        char L[64], uuid[48];
        if (gm_uuid_recorded(ds->card.uuid)) {
            gm_uuid_full(ds->card.uuid, uuid, sizeof uuid);
            snprintf(L, sizeof L, "uuid=\"%s\"", uuid);
        } else {
            snprintf(L, sizeof L, "device=\"%d\"", ds->card.dev);
        }
        if (ds->physical)
            U(F_DEV_PHYS, ds->physical);
        U(F_DEV_USED, ds->used);
        U(F_DEV_PROCS, ds->procs);
    }
}

static void hami_series(struct scrape *s)
{
    struct gm_expo_buf *lab = &s->lab;
    for (size_t i = 0; i < s->nhami; i++) {
        const struct hami_row *r = &s->hami[i];
        char dev[16];
        snprintf(dev, sizeof dev, "%u", r->dev);
        lab->len = 0;
        gm_expo_puts(lab, r->key);
        gm_expo_label(lab, true, "vdevice_index", dev, 0);
        gm_expo_label(lab, true, "device_uuid", r->uuid, 0);
        gm_expo_label(lab, true, "zone", "vGPU", 0);
        const char *L = lab->p;
        U(F_H_USED, r->used);
        if (r->limit)
            U(F_H_LIMIT, r->limit);
    }
}

static void health(struct scrape *s, struct gm_metrics_totals *tot,
                   unsigned segs, unsigned groups, uint64_t t0)
{
    const char *L = NULL;
    U(F_SEGS, segs);
    U(F_GROUPS, groups);
    struct gm_expo_buf *b = fam(s, F_ERRS);
    for (int r = 0; r < GM_MX_NREASONS; r++) {
        char lab[48];
        snprintf(lab, sizeof lab, "reason=\"%s\"", reason_names[r]);
        gm_expo_sample_u64(b, fams[F_ERRS].name, NULL, lab, NULL,
                           tot->errors[r]);
    }
    D(F_DUR, (double)(gm_clock_monotonic_ns() - t0) / 1e9);
}

#undef U
#undef D

static void join(struct scrape *s, struct gm_expo_buf *out)
{
    for (int f = 0; f < F_COUNT; f++) {
        if ((f == F_H_USED || f == F_H_LIMIT) && !s->o->hami)
            continue;
        gm_expo_header(out, &fams[f], s->fmt);
        gm_expo_put(out, s->fam[f].p, s->fam[f].len);
    }
    if (s->fmt == GM_EXPO_OPENMETRICS)
        gm_expo_puts(out, "# EOF\n");
}

static void scrape_free(struct scrape *s)
{
    for (int f = 0; f < F_COUNT; f++)
        gm_expo_buf_free(&s->fam[f]);
    gm_expo_buf_free(&s->lab);
    free(s->gname);
    free(s->members);
    free(s->hami);
    for (size_t i = 0; i < s->nseen; i++)
        free(s->seen[i].labels);
    free(s->seen);
    free(s);
}

int gm_metrics_scrape(const struct gm_metrics_opts *o,
                      struct gm_metrics_totals *tot, enum gm_expo_fmt fmt,
                      struct gm_expo_buf *out, struct gm_metrics_result *res,
                      char *err, size_t errcap)
{
    uint64_t t0 = gm_clock_monotonic_ns();
    struct scrape *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    s->o = o;
    s->fmt = fmt;
    for (int f = 0; f < F_COUNT; f++)
        gm_expo_buf_init(&s->fam[f], o->max_bytes + 65536);
    gm_expo_buf_init(&s->lab, 0);
    /* Bucket i holds [2^i, 2^(i+1)) ns; the last one is open above. */
    for (unsigned i = 0; i + 1 < GM_ABI_LAT_BUCKETS; i++)
        snprintf(s->le[i], sizeof s->le[i], "le=\"%.12g\"",
                 (double)(1ull << (i + 1)) * 1e-9);
    int rc = 0;
    unsigned groups = read_groups(s);
    unsigned segs = read_processes(s, t0 + o->timeout_ns);
    if (segs == (unsigned)-1) {
        snprintf(err, errcap, "cannot read %s: %s", o->dir, strerror(errno));
        segs = 0;
        rc = -1;
    }
    device_sums(s);
    if (o->hami)
        hami_series(s);
    unsigned skipped = 0;
    for (int r = 0; r < GM_MX_NREASONS; r++) {
        tot->errors[r] += s->skipped[r];
        skipped += s->skipped[r];
    }
    tot->scrapes++;
    if (rc == 0 && (s->oom || any_failed(s))) {
        snprintf(err, errcap, "out of memory (or past %zu bytes of text)",
                 o->max_bytes);
        rc = -1;
    }
    if (rc != 0) {
        /* Only the exporter's own figures: a partial family would read
         * as processes that vanished. */
        for (int f = 0; f < F_COUNT; f++) {
            s->fam[f].len = 0;
            s->fam[f].failed = false;
        }
        segs = groups = 0;
    }
    health(s, tot, segs, groups, t0);
    join(s, out);
    if (res != NULL) {
        res->segments = segs;
        res->groups = groups;
        res->skipped = skipped;
        res->duration_ns = gm_clock_monotonic_ns() - t0;
    }
    scrape_free(s);
    return rc;
}
