/*
 * tools/lib/util.c — helpers shared by `gpumem` and `gpumem-top` (see
 * tools/lib/util.h): prefix choice, segment scans, the process
 * table in text and JSON, the scan of group segments and the groups
 * section in text and JSON, the options of the subcommands.
 *
 * Invariants: segments are opened read-only through the reader library and
 * closed again before gm_scan returns (a scan holds copies, not mappings);
 * every process state comes from gm_seg_summary (a zombie is not alive);
 * group segments are copied with gm_group_snapshot (pread, no lock); every
 * figure printed comes from a snapshot copy; every string from a segment
 * goes out through tools/lib/escape.h (gm_esc_term_put in text,
 * gm_json_str in JSON); in JSON no limit is null, never 0 (docs/tools.md,
 * "JSON keys").
 */
#include "tools/lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/parse.h"
#include "policy/policy.h"
#include "shim/base/clock.h"
#include "shim/base/shmfile.h"
#include "tools/lib/card.h"
#include "tools/lib/leak.h"

#define SCAN_MAX 4096
#define GSCAN_MAX 256

const char *gm_tool_prefix(const char *cmd, const char *opt)
{
    const char *p = opt;
    const char *from = "--prefix ";
    if (p == NULL) {
        p = getenv("GPUMEM_SHM_PREFIX");
        from = "GPUMEM_SHM_PREFIX=";
        if (p == NULL)
            p = "gpumem"; /* the default, checked like any other */
    }
    /* The library's rule: a prefix it would refuse is refused here too
     * (an empty one is not the default, as it is not in the library). */
    char buf[GM_NAME_WHY], shown[GM_ESC_TERM_CAP(48)];
    const char *why = gm_shm_prefix_problem(p, buf, sizeof buf);
    if (why != NULL) {
        fprintf(stderr, "gpumem: %s: %s'%s' %s; use " GM_SHM_PREFIX_RULE
                "\n", cmd, from, gm_esc_term(p, 0, shown, sizeof shown), why);
        return NULL;
    }
    return gm_tool_dir_check(cmd) == 0 ? p : NULL;
}

int gm_tool_policy_dir(const char *cmd, const struct gm_policy *p)
{
    char err[512];
    bool group = p->group[0] != '\0';
    if ((!p->telemetry && !group) ||
        gm_shm_dir_check(p->shm_dir, geteuid(), false, err, sizeof err) == 0)
        return 0;
    if (group && p->on_bad_config == GM_BAD_EXIT) {
        fprintf(stderr, "gpumem: %s: group '%s': %s; the group limit cannot "
                "be enforced there: a program would exit with status 2 at "
                "its first CUDA call\n", cmd, p->group, err);
        return -1;
    }
    fprintf(stderr, "gpumem: %s: %s; a program would keep its telemetry "
            "private%s (its limit is still enforced)\n", cmd, err,
            group ? " and run without its group" : "");
    return 0;
}

static char tool_dir[GM_SHM_DIR_MAX + 1];

const char *gm_tool_shm_dir(void)
{
    if (tool_dir[0] == '\0') {
        const char *v = getenv("GPUMEM_SHM_DIR"), *why;
        /* A value refused by gm_tool_dir_check never gets here in a tool
         * that checked; the default is only for one that did not. */
        if (v == NULL ||
            gm_parse_shm_dir(v, tool_dir, sizeof tool_dir, &why) != 0)
            snprintf(tool_dir, sizeof tool_dir, "%s", GM_READER_DEFAULT_DIR);
    }
    return tool_dir;
}

int gm_tool_dir_check(const char *cmd)
{
    const char *v = getenv("GPUMEM_SHM_DIR"), *why = NULL;
    char norm[GM_SHM_DIR_MAX + 1], err[512];
    /* Empty is an error, not unset, as in the library. */
    if (v != NULL && gm_parse_shm_dir(v, norm, sizeof norm, &why) != 0) {
        fprintf(stderr, "gpumem: %s: GPUMEM_SHM_DIR='%s' %s; use an absolute "
                "directory path of at most %d bytes without . or .. "
                "components\n", cmd, v, why, GM_SHM_DIR_MAX);
        return -1;
    }
    /* Root reads every user's directory; the files in it are still
     * opened with O_NOFOLLOW and checked one by one. */
    if (gm_shm_dir_check(gm_tool_shm_dir(), getuid(), geteuid() == 0, err,
                         sizeof err) != 0) {
        fprintf(stderr, "gpumem: %s: %s (%s)\n", cmd, err,
                v != NULL ? "from GPUMEM_SHM_DIR"
                          : "the default: GPUMEM_SHM_DIR is unset");
        return -1;
    }
    return 0;
}

const char *gm_user_name(uid_t uid, char *buf, size_t cap)
{
    struct passwd pw, *res = NULL;
    char tmp[1024];
    if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res != NULL)
        snprintf(buf, cap, "%s", res->pw_name);
    else
        snprintf(buf, cap, "%u", (unsigned)uid);
    return buf;
}

/* ---- scanning ------------------------------------------------------------ */

static bool want_proc(const struct gm_scan_proc *sp, unsigned flags)
{
    if (!(flags & GM_SCAN_ALL_USERS) && sp->p.uid != getuid())
        return false;
    if (!(flags & GM_SCAN_DEAD) && sp->p.state == GM_SEG_DEAD)
        return false;
    /* A writer that exited without GPUMEM_KEEP unlinks its segment; one
     * seen closed but not kept is about to disappear. */
    if (!(flags & GM_SCAN_DEAD) && sp->p.state == GM_SEG_EXITED && !sp->kept)
        return false;
    return true;
}

static int read_one(const char *prefix, const struct gm_seg_id *id,
                    const struct gm_locks *lm, struct gm_scan_proc *sp)
{
    struct gm_seg s;
    char err[256];
    if (gm_seg_open_id(&s, gm_tool_shm_dir(), prefix, id, err,
                       sizeof err) != 0)
        return -1;
    memset(sp, 0, sizeof *sp);
    int r = gm_seg_summary_with(&s, lm, &sp->p);
    snprintf(sp->path, sizeof sp->path, "%s", s.path);
    gm_seg_close(&s);
    if (r < 0)
        return -1;
    sp->kept = (sp->p.snap.flags & GM_ABI_F_KEPT) != 0;
    return 0;
}

static bool want_job(const struct gm_scan_proc *sp, const char *job)
{
    return job == NULL || gm_ident_match(&sp->p.snap.ident, job);
}

static int cmp_shown(const void *pa, const void *pb)
{
    const struct gm_proc *a = &((const struct gm_scan_proc *)pa)->p;
    const struct gm_proc *b = &((const struct gm_scan_proc *)pb)->p;
    int x = gm_proc_shown_pid(a), y = gm_proc_shown_pid(b);
    x = x > 0 ? x : a->pid;
    y = y > 0 ? y : b->pid;
    if (x != y)
        return (x > y) - (x < y);
    return (a->pidns > b->pidns) - (a->pidns < b->pidns);
}

int gm_scan_job(const char *prefix, unsigned flags, const char *job,
                struct gm_scan *out)
{
    static struct gm_seg_id ids[SCAN_MAX];
    out->procs = NULL;
    out->n = 0;
    int n = gm_reader_list_ids(gm_tool_shm_dir(), prefix, ids, SCAN_MAX);
    if (n < 0) {
        fprintf(stderr, "gpumem: cannot read %s: %s\n", gm_tool_shm_dir(),
                strerror(errno));
        return -1;
    }
    if (n > SCAN_MAX)
        n = SCAN_MAX;
    if (n == 0)
        return 0;
    out->procs = calloc((size_t)n, sizeof *out->procs);
    if (out->procs == NULL) {
        fprintf(stderr, "gpumem: out of memory\n");
        return -1;
    }
    /* One read of /proc/locks for every writer of another pid namespace. */
    struct gm_locks lm = { NULL, 0, 0 };
    bool foreign = false;
    uint64_t me = gm_reader_self_pidns();
    for (int i = 0; i < n && !foreign; i++)
        foreign = ids[i].pidns != 0 ? ids[i].pidns != me
                                    : me != 0 && me != GM_PIDNS_INIT;
    if (foreign)
        (void)gm_locks_load(&lm, NULL);
    for (int i = 0; i < n; i++) {
        struct gm_scan_proc *sp = &out->procs[out->n];
        if (read_one(prefix, &ids[i], &lm, sp) == 0 && want_proc(sp, flags) &&
            want_job(sp, job))
            out->n++;
    }
    gm_locks_free(&lm);
    /* By the pid shown (host pids of containers' processes among the
     * others), then the namespace. */
    qsort(out->procs, out->n, sizeof *out->procs, cmp_shown);
    return (int)out->n;
}

int gm_scan(const char *prefix, unsigned flags, struct gm_scan *out)
{
    return gm_scan_job(prefix, flags, NULL, out);
}

int gm_proc_shown_pid(const struct gm_proc *p)
{
    return p->host_pid > 0 ? p->host_pid : p->local ? p->pid : 0;
}

const char *gm_proc_pid_text(const struct gm_proc *p, char *buf, size_t cap)
{
    int pid = gm_proc_shown_pid(p);
    if (pid > 0)
        snprintf(buf, cap, "%d", pid);
    else
        snprintf(buf, cap, "~%d", p->pid);
    return buf;
}

void gm_scan_free(struct gm_scan *sc)
{
    free(sc->procs);
    sc->procs = NULL;
    sc->n = 0;
}

const char *gm_proc_state_word(const struct gm_scan_proc *sp)
{
    switch (sp->p.state) {
    case GM_SEG_ALIVE: return "live";
    case GM_SEG_EXITED: return sp->kept ? "kept" : "exited";
    case GM_SEG_DEAD: return "dead";
    }
    return "?";
}

bool gm_dev_used(const struct gm_abi_dev *d)
{
    return d->present || d->allocs || d->used || d->refusals;
}

size_t gm_scan_rows(const struct gm_scan *sc, struct gm_row *rows,
                    size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < sc->n && k < max; i++) {
        const struct gm_snapshot *s = &sc->procs[i].p.snap;
        size_t before = k;
        for (unsigned d = 0; d < s->dev_count && d < GM_ABI_MAX_DEVICES &&
                             k < max; d++) {
            if (!gm_dev_used(&s->dev[d]))
                continue;
            rows[k++] = (struct gm_row){ &sc->procs[i], (int)d, &s->dev[d] };
        }
        if (k == before && k < max)
            rows[k++] = (struct gm_row){ &sc->procs[i], -1, NULL };
    }
    return k;
}

uint64_t gm_dev_lat_q(const struct gm_abi_dev *d, unsigned per_mille)
{
    return gm_hist_quantile(d->lat_hist, GM_ABI_LAT_BUCKETS, per_mille);
}

bool gm_hist_window(const uint64_t *h, unsigned nb, unsigned rows,
                    unsigned *lo, unsigned *hi)
{
    unsigned a = nb, z = 0;
    for (unsigned b = 0; b < nb; b++)
        if (h[b]) {
            a = b < a ? b : a;
            z = b;
        }
    if (a == nb)
        return false;
    if (rows == 0)
        rows = 1;
    if (z - a + 1 <= rows) {
        *lo = a;
        *hi = z;
        return true;
    }
    /* Sliding sum over windows [s, s + rows) inside [a, z]; counts are
     * bounded by 2^64 events in all, so the sums cannot wrap. */
    uint64_t sum = 0, best;
    for (unsigned b = a; b < a + rows; b++)
        sum += h[b];
    best = sum;
    unsigned bs = a;
    for (unsigned s0 = a + 1; s0 + rows - 1 <= z; s0++) {
        sum += h[s0 + rows - 1] - h[s0 - 1];
        if (sum > best) {
            best = sum;
            bs = s0;
        }
    }
    *lo = bs;
    *hi = bs + rows - 1;
    return true;
}

/* The same number as gm_format_size (tenths rounded half up, 1023.96 K
 * shown as 1.0 M), in the short form "1.5G": one rounding rule for every
 * size the tools print. */
size_t gm_size_short(uint64_t bytes, char *buf, size_t cap)
{
    static const char units[] = "BKMGTPE";
    if (bytes < 1024) {
        int n = snprintf(buf, cap, "%lluB", (unsigned long long)bytes);
        return n < 0 ? 0 : (size_t)n;
    }
    __extension__ typedef unsigned __int128 u128;
    unsigned u = 1;
    u128 unit = 1024;
    while (u < 6 && (u128)bytes >= unit * 1024) {
        unit *= 1024;
        u++;
    }
    u128 tenths = ((u128)bytes * 10 + unit / 2) / unit;
    if (tenths >= 10240 && u < 6) {
        unit *= 1024;
        u++;
        tenths = ((u128)bytes * 10 + unit / 2) / unit;
    }
    int n = snprintf(buf, cap, "%llu.%u%c", (unsigned long long)(tenths / 10),
                     (unsigned)(tenths % 10), units[u]);
    return n < 0 ? 0 : (size_t)n;
}

uint64_t gm_share(uint64_t part, uint64_t whole, uint64_t scale)
{
    __extension__ typedef unsigned __int128 u128;
    if (whole == 0)
        return 0;
    u128 v = (u128)part * scale / whole;
    return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

uint64_t gm_pct_shown(uint64_t used, uint64_t limit)
{
    uint64_t pct = gm_share(used, limit, 100);
    return pct > GM_PCT_SHOWN_MAX ? GM_PCT_SHOWN_MAX : pct;
}

void gm_pct_text(uint64_t used, uint64_t limit, char *buf, size_t cap)
{
    if (limit == 0)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%llu%%",
                 (unsigned long long)gm_pct_shown(used, limit));
}

/* ---- text table ---------------------------------------------------------- */

static void pct_text(const struct gm_abi_dev *d, char *buf, size_t cap)
{
    gm_pct_text(d ? d->used : 0, d ? d->limit : 0, buf, cap);
}

static void print_row(FILE *f, const struct gm_row *r)
{
    const struct gm_snapshot *s = &r->sp->p.snap;
    const struct gm_abi_dev *d = r->d;
    char user[64], used[32] = "-", peak[32] = "-", lim[32] = "-", pct[16];
    char dev[16] = "-", frag[32] = "-", p99[32] = "-", pid[24];
    char job[GM_ID_NS_LEN + GM_ID_POD_LEN + 2];
    gm_user_name(r->sp->p.uid, user, sizeof user);
    gm_ident_job(&s->ident, job, sizeof job);
    gm_proc_pid_text(&r->sp->p, pid, sizeof pid);
    pct_text(d, pct, sizeof pct);
    if (d != NULL) {
        snprintf(dev, sizeof dev, "%d", r->dev);
        gm_size_short(d->used, used, sizeof used);
        gm_size_short(d->peak, peak, sizeof peak);
        if (d->limit)
            gm_size_short(d->limit, lim, sizeof lim);
        snprintf(frag, sizeof frag, "%llu.%llu%%",
                 (unsigned long long)(d->frag_ppm / 10000),
                 (unsigned long long)(d->frag_ppm / 1000 % 10));
        if (d->allocs)
            gm_format_latency(gm_dev_lat_q(d, 990), p99, sizeof p99);
    }
    fprintf(f, "%7s %-8.8s %-14.14s %3s %8s %8s %8s %4s %8llu %8llu %5llu "
            "%6s %9s %-6s %-6s ", pid, user, job, dev, used, peak, lim, pct,
            (unsigned long long)(d ? d->allocs : 0),
            (unsigned long long)(d ? d->frees : 0),
            (unsigned long long)(d ? d->refusals : 0), frag, p99,
            gm_mode_name((enum gm_mode)s->mode), gm_proc_state_word(r->sp));
    gm_esc_term_put(f, s->cmdline, 0);
    fputc('\n', f);
}

void gm_rows_print_text(FILE *f, const struct gm_row *rows, size_t n)
{
    fprintf(f, "%7s %-8s %-14s %3s %8s %8s %8s %4s %8s %8s %5s %6s %9s "
            "%-6s %-6s %s\n", "PID", "USER", "JOB", "DEV", "USED", "PEAK",
            "LIMIT", "%",
            "ALLOCS", "FREES", "OOMS", "FRAG", "P99", "MODE", "STATE",
            "COMMAND");
    for (size_t i = 0; i < n; i++)
        print_row(f, &rows[i]);
}

/* ---- JSON ---------------------------------------------------------------- */

static void ju(FILE *f, const char *key, uint64_t v)
{
    fprintf(f, ",\"%s\":%llu", key, (unsigned long long)v);
}

/* A size: "KEY_bytes" (the one naming of every JSON output, as in
 * gpumem report --json), then the key without the unit, kept one release
 * for readers of earlier versions (docs/tools.md, "JSON keys"). */
static void jb(FILE *f, const char *key, uint64_t v)
{
    fprintf(f, ",\"%s_bytes\":%llu,\"%s\":%llu", key,
            (unsigned long long)v, key, (unsigned long long)v);
}

/* A limit: "KEY_bytes" its size, null when there is none (never 0); the
 * key without the unit keeps its earlier form, 0 for none, for the one
 * release it is kept. */
static void jlimit(FILE *f, const char *key, uint64_t v, bool none)
{
    if (none)
        fprintf(f, ",\"%s_bytes\":null,\"%s\":0", key, key);
    else
        jb(f, key, v);
}

/* The count of refused requests: "refused", and "ooms" kept one release. */
static void jrefused(FILE *f, uint64_t v)
{
    fprintf(f, ",\"refused\":%llu,\"ooms\":%llu", (unsigned long long)v,
            (unsigned long long)v);
}

static void dev_json(FILE *f, const struct gm_snapshot *s, unsigned i)
{
    const struct gm_abi_dev *d = &s->dev[i];
    char uuid[48];
    fprintf(f, "{\"device\":%u,\"consistent\":%s", i,
            s->dev_state[i] == GM_SNAP_OK ? "true" : "false");
    gm_dev_uuid(d, uuid, sizeof uuid);
    fputs(",\"uuid\":", f);
    if (uuid[0])
        gm_json_str(f, uuid);
    else
        fputs("null", f);
    jb(f, "physical", d->physical);
    jlimit(f, "limit", d->limit, d->limit == 0);
    jb(f, "used", d->used);
    jb(f, "peak", d->peak);
    jb(f, "context", d->context_bytes);
    jb(f, "pool_reserve", d->pool_reserve);
    ju(f, "allocs", d->allocs);
    ju(f, "frees", d->frees);
    jrefused(f, d->refusals);
    ju(f, "live_allocs", d->live_allocs);
    ju(f, "live_bytes", d->live_bytes);
    jb(f, "total_allocated", d->total_bytes);
    ju(f, "context_freed_bytes", d->ended_bytes); /* new: no older key */
    ju(f, "frag_ppm", d->frag_ppm);
    ju(f, "alloc_latency_p50_ns", gm_dev_lat_q(d, 500));
    ju(f, "alloc_latency_p99_ns", gm_dev_lat_q(d, 990));
}

/* The segment's ring, drained once for every device's leak verdict. */
struct leak_src {
    struct gm_seg seg;
    bool open;
    struct gm_abi_record *ev;
    size_t n;
    uint64_t lost;
};

static void leak_src_open(struct leak_src *ls, const struct gm_scan_proc *sp)
{
    char err[256];
    memset(ls, 0, sizeof *ls);
    if (gm_seg_open_path(&ls->seg, sp->path, err, sizeof err) != 0)
        return;
    /* The same process as the scan's (its pid may have been reused since
     * the scan closed the file): else no verdict. */
    if (ls->seg.start_ticks != sp->p.snap.start_ticks) {
        gm_seg_close(&ls->seg);
        return;
    }
    ls->open = true;
    if (gm_leak_drain_all(&ls->seg, &ls->ev, &ls->n, &ls->lost) != 0) {
        gm_seg_close(&ls->seg);
        ls->open = false;
    }
}

static void leak_src_close(struct leak_src *ls)
{
    if (ls->open)
        gm_seg_close(&ls->seg);
    free(ls->ev);
}

static void dev_leak_json(FILE *f, struct leak_src *ls,
                          const struct gm_snapshot *s, unsigned i)
{
    struct gm_leak l;
    char err[256];
    fputc(',', f);
    if (!ls->open) {
        gm_leak_json(f, NULL);
        return;
    }
    gm_leak_of_seg(&ls->seg, s, i, ls->ev, ls->n, ls->lost, &l, err, sizeof err);
    gm_leak_json(f, &l);
    gm_leak_free(&l);
}

/* ,"KEY":"text" or ,"KEY":null for an empty one. */
static void jstr_or_null(FILE *f, const char *key, const char *v)
{
    fprintf(f, ",\"%s\":", key);
    if (v[0] == '\0')
        fputs("null", f);
    else
        gm_json_str(f, v);
}

/* "job": the JOB column's label; "identity": every field the writer
 * recorded (strings already of safe bytes: gm_ident_copy). */
static void ident_json(FILE *f, const struct gm_abi_ident *id)
{
    char job[GM_ID_NS_LEN + GM_ID_POD_LEN + 2];
    gm_ident_job(id, job, sizeof job);
    fputs(",\"job\":", f);
    if (strcmp(job, "-") == 0)
        fputs("null", f);
    else
        gm_json_str(f, job);
    fputs(",\"identity\":{\"recorded\":", f);
    fputs(id->flags & GM_ID_F_SET ? "true" : "false", f);
    jstr_or_null(f, "slurm_job_id", id->job_id);
    jstr_or_null(f, "slurm_step_id", id->step_id);
    jstr_or_null(f, "slurm_job_user", id->job_user);
    jstr_or_null(f, "pod_namespace", id->pod_namespace);
    jstr_or_null(f, "pod_name", id->pod_name);
    jstr_or_null(f, "container_name", id->container_name);
    jstr_or_null(f, "pod_uid", id->pod_uid);
    jstr_or_null(f, "container_id", id->container_id);
    jstr_or_null(f, "runtime", id->runtime);
    fprintf(f, ",\"uid\":%u,\"pidns\":%llu,\"altered\":%s}",
            (unsigned)id->uid, (unsigned long long)id->pidns,
            id->flags & GM_ID_F_ALTERED ? "true" : "false");
}

void gm_proc_print_json(FILE *f, const struct gm_scan_proc *sp,
                        unsigned flags)
{
    const struct gm_snapshot *s = &sp->p.snap;
    uint64_t used = 0, peak = 0, limit = 0, ctx = 0, allocs = 0, frees = 0;
    uint64_t ooms = 0, live = 0, live_bytes = 0;
    bool unlimited = false, any = false;
    char user[64];
    for (unsigned i = 0; i < s->dev_count && i < GM_ABI_MAX_DEVICES; i++) {
        const struct gm_abi_dev *d = &s->dev[i];
        if (!gm_dev_used(d))
            continue;
        any = true;
        used += d->used;
        peak += d->peak;
        limit += d->limit;
        unlimited |= d->limit == 0;
        ctx += d->context_bytes;
        allocs += d->allocs;
        frees += d->frees;
        ooms += d->refusals;
        live += d->live_allocs;
        live_bytes += d->live_bytes;
    }
    int pid = gm_proc_shown_pid(&sp->p);
    if (pid > 0)
        fprintf(f, "{\"pid\":%d", pid);
    else
        fputs("{\"pid\":null", f);
    fprintf(f, ",\"ns_pid\":%d,\"pidns\":%llu,\"user\":", sp->p.pid,
            (unsigned long long)sp->p.pidns);
    gm_json_str(f, gm_user_name(sp->p.uid, user, sizeof user));
    fprintf(f, ",\"uid\":%u,\"state\":\"%s\",\"command\":",
            (unsigned)sp->p.uid, gm_proc_state_word(sp));
    gm_json_str(f, s->cmdline);
    fprintf(f, ",\"mode\":\"%s\",\"on_oom\":\"%s\",\"policy\":",
            gm_mode_name((enum gm_mode)s->mode),
            gm_on_oom_name((enum gm_on_oom)s->on_oom));
    gm_json_str(f, s->policy);
    ident_json(f, &s->ident);
    jb(f, "used", used);
    jb(f, "peak", peak);
    jlimit(f, "limit", limit, unlimited || !any);
    jb(f, "context", ctx);
    ju(f, "allocs", allocs);
    ju(f, "frees", frees);
    jrefused(f, ooms);
    ju(f, "live_allocs", live);
    ju(f, "live_bytes", live_bytes);
    jb(f, "host_pinned", s->host_pinned);
    ju(f, "events", s->ring_head);
    ju(f, "events_lost", gm_snapshot_events_lost(s));
    ju(f, "start_realtime_ns", s->start_realtime_ns);
    fputs(",\"devices\":[", f);
    unsigned shown = 0;
    static struct leak_src ls;
    bool leak = flags & GM_JSON_LEAK;
    if (leak)
        leak_src_open(&ls, sp);
    for (unsigned i = 0; i < s->dev_count && i < GM_ABI_MAX_DEVICES; i++) {
        if (!gm_dev_used(&s->dev[i]))
            continue;
        if (shown++)
            fputc(',', f);
        dev_json(f, s, i);
        if (leak)
            dev_leak_json(f, &ls, s, i);
        fputc('}', f);
    }
    if (leak)
        leak_src_close(&ls);
    fputs("]}", f);
}

void gm_scan_print_json(FILE *f, const struct gm_scan *sc, unsigned flags)
{
    fputc('[', f);
    for (size_t i = 0; i < sc->n; i++) {
        if (i)
            fputc(',', f);
        gm_proc_print_json(f, &sc->procs[i], flags);
    }
    fputc(']', f);
}

/* ---- groups: scan ------------------------------------------------------- */

static int add_gpath(void *arg, const char *path, const char *name)
{
    struct gm_gpaths *gp = arg;
    (void)name;
    if (gp->n == gp->cap) {
        size_t cap = gp->cap ? gp->cap * 2 : 16;
        if (cap > GSCAN_MAX)
            return 1;
        void *p = realloc(gp->path, cap * sizeof gp->path[0]);
        if (p == NULL)
            return 1;
        gp->path = p;
        gp->cap = cap;
    }
    snprintf(gp->path[gp->n++], sizeof gp->path[0], "%s", path);
    return 0;
}

/* The command lines of g's members from their process segments. */
static void member_commands(const char *prefix, struct gm_scan_group *g)
{
    struct gm_snapshot *snap = malloc(sizeof *snap);
    if (snap == NULL)
        return;
    for (unsigned i = 0; i < g->v.nmembers && i < GM_GROUP_MAX_MEMBERS;
         i++) {
        const struct gm_group_view_member *m = &g->v.member[i];
        struct gm_seg s;
        char err[256];
        g->cmd[i][0] = '\0';
        /* A group of another pid namespace: its members' segments carry
         * the namespace in their names. */
        struct gm_seg_id id = { m->pid, g->v.pidns != GM_PIDNS_INIT
                                            ? g->v.pidns : 0 };
        if (m->pid <= 0 || gm_seg_open_id(&s, gm_tool_shm_dir(), prefix, &id,
                                          err, sizeof err) != 0)
            continue;
        if (gm_seg_snapshot(&s, snap) >= 0 &&
            (m->start_ticks == 0 || snap->start_ticks == 0 ||
             m->start_ticks == snap->start_ticks))
            snprintf(g->cmd[i], sizeof g->cmd[i], "%s", snap->cmdline);
        gm_seg_close(&s);
    }
    free(snap);
}

/* Reads one group file into g; false when it is not to be listed. */
static bool read_group(const char *path, unsigned flags,
                       struct gm_scan_group *g)
{
    struct stat st;
    char err[512];
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    if (!(flags & GM_SCAN_ALL_USERS) && st.st_uid != getuid())
        return false;
    if (gm_group_snapshot(path, &g->v, err, sizeof err) != 0)
        return false;
    snprintf(g->path, sizeof g->path, "%s", path);
    g->uid = st.st_uid;
    return true;
}

static int cmp_group(const void *a, const void *b)
{
    const struct gm_scan_group *x = a, *y = b;
    int c = strcmp(x->v.name, y->v.name);
    return c ? c : strcmp(x->path, y->path);
}

int gm_group_paths(const char *dir, const char *prefix, struct gm_gpaths *gp)
{
    gp->path = NULL;
    gp->n = gp->cap = 0;
    if (gm_group_list(dir, prefix, add_gpath, gp) < 0) {
        free(gp->path);
        gp->path = NULL;
        gp->n = 0;
        return -1;
    }
    return 0;
}

int gm_gscan(const char *prefix, unsigned flags, struct gm_gscan *out)
{
    struct gm_gpaths gp;
    out->groups = NULL;
    out->n = 0;
    if (gm_group_paths(gm_tool_shm_dir(), prefix, &gp) < 0) {
        fprintf(stderr, "gpumem: cannot read %s: %s\n", gm_tool_shm_dir(),
                strerror(errno));
        return -1;
    }
    if (gp.n > 0) {
        out->groups = calloc(gp.n, sizeof *out->groups);
        if (out->groups == NULL) {
            free(gp.path);
            fprintf(stderr, "gpumem: out of memory\n");
            return -1;
        }
    }
    for (size_t i = 0; i < gp.n; i++)
        if (read_group(gp.path[i], flags, &out->groups[out->n]))
            member_commands(prefix, &out->groups[out->n++]);
    free(gp.path);
    if (out->n > 1)
        qsort(out->groups, out->n, sizeof *out->groups, cmp_group);
    return (int)out->n;
}

void gm_gscan_free(struct gm_gscan *gs)
{
    free(gs->groups);
    gs->groups = NULL;
    gs->n = 0;
}

unsigned gm_group_live_members(const struct gm_group_view *v)
{
    unsigned n = 0;
    for (unsigned i = 0; i < v->nmembers && i < GM_GROUP_MAX_MEMBERS; i++)
        n += v->member[i].alive;
    return n;
}

unsigned gm_group_dead_members(const struct gm_group_view *v)
{
    unsigned n = v->nmembers < GM_GROUP_MAX_MEMBERS ? v->nmembers
                                                    : GM_GROUP_MAX_MEMBERS;
    return n - gm_group_live_members(v);
}

const char *gm_uuid_short(const unsigned char uuid[16], char *buf,
                          size_t cap)
{
    snprintf(buf, cap, "GPU-%02x%02x%02x%02x", uuid[0], uuid[1], uuid[2],
             uuid[3]);
    return buf;
}

void gm_dev_uuid(const struct gm_abi_dev *d, char *buf, size_t cap)
{
    unsigned char u[16];
    if (cap > 0)
        buf[0] = '\0';
    memcpy(u, d->uuid, sizeof u);
    if (gm_uuid_recorded(u))
        gm_uuid_full(u, buf, cap);
}

void gm_uuid_full(const unsigned char u[16], char *buf, size_t cap)
{
    static const int dash[] = { 4, 6, 8, 10 };
    size_t k = (size_t)snprintf(buf, cap, "GPU-");
    for (int i = 0, d = 0; i < 16 && k + 3 < cap; i++) {
        if (d < 4 && i == dash[d]) {
            buf[k++] = '-';
            d++;
        }
        k += (size_t)snprintf(buf + k, cap - k, "%02x", u[i]);
    }
}

/* ---- groups: text ------------------------------------------------------- */

static void size_or_dash(uint64_t v, bool show, char *buf, size_t cap)
{
    if (show)
        gm_size_short(v, buf, cap);
    else
        snprintf(buf, cap, "-");
}

static void group_dev_line(FILE *f, const struct gm_scan_group *g, int d,
                           const char *members)
{
    const struct gm_group_view *v = &g->v;
    char dev[24] = "-", used[32] = "-", peak[32] = "-", lim[32] = "-";
    char pct[16] = "-";
    if (d >= 0) {
        const struct gm_group_view_dev *gd = &v->dev[d];
        gm_uuid_short(gd->uuid, dev, sizeof dev);
        gm_size_short(gd->used, used, sizeof used);
        gm_size_short(gd->peak, peak, sizeof peak);
        size_or_dash(gd->limit, gd->limit != 0, lim, sizeof lim);
        gm_pct_text(gd->used, gd->limit, pct, sizeof pct);
    }
    char name[GM_ESC_TERM_CAP(sizeof v->name)];
    gm_esc_term(v->name, 0, name, sizeof name);
    fprintf(f, "%-16s %-12s %8s %8s %8s %4s  %s\n", name, dev, used, peak,
            lim, pct, members);
}

static void member_line(FILE *f, const struct gm_scan_group *g, unsigned i,
                        int d)
{
    const struct gm_group_view_member *m = &g->v.member[i];
    char dev[24] = "-", share[32] = "-", used[32] = "-";
    if (d >= 0) {
        const struct gm_group_view_dev *gd = &g->v.dev[d];
        gm_uuid_short(gd->uuid, dev, sizeof dev);
        size_or_dash(m->share[d], gd->limit != 0, share, sizeof share);
        gm_size_short(m->used[d], used, sizeof used);
    }
    fprintf(f, "  %7d %7.2f %-12s %8s %8s %-6s ", m->pid, m->weight, dev,
            share, used, m->alive ? "live" : "dead");
    gm_esc_term_put(f, g->cmd[i][0] ? g->cmd[i] : "-", 0);
    fputc('\n', f);
}

static void group_text(FILE *f, const struct gm_scan_group *g)
{
    const struct gm_group_view *v = &g->v;
    char members[48];
    unsigned live = gm_group_live_members(v), dead = gm_group_dead_members(v);
    if (dead)
        snprintf(members, sizeof members, "%u (+%u dead)", live, dead);
    else
        snprintf(members, sizeof members, "%u", live);
    bool any = false;
    for (unsigned d = 0; d < v->ndev && d < GM_GROUP_MAX_DEVICES; d++)
        if (v->dev[d].present) {
            group_dev_line(f, g, (int)d, members);
            any = true;
        }
    if (!any)
        group_dev_line(f, g, -1, members);
    fprintf(f, "  %7s %7s %-12s %8s %8s %-6s %s\n", "PID", "WEIGHT",
            "DEVICE", "SHARE", "USED", "STATE", "COMMAND");
    for (unsigned i = 0; i < v->nmembers && i < GM_GROUP_MAX_MEMBERS; i++) {
        bool shown = false;
        for (unsigned d = 0; d < v->ndev && d < GM_GROUP_MAX_DEVICES; d++)
            if (v->dev[d].present) {
                member_line(f, g, i, (int)d);
                shown = true;
            }
        if (!shown)
            member_line(f, g, i, -1);
    }
}

void gm_gscan_print_text(FILE *f, const struct gm_gscan *gs)
{
    if (gs->n == 0)
        return;
    fprintf(f, "\n%-16s %-12s %8s %8s %8s %4s  %s\n", "GROUP", "DEVICE",
            "USED", "PEAK", "LIMIT", "%", "MEMBERS");
    for (size_t i = 0; i < gs->n; i++)
        group_text(f, &gs->groups[i]);
}

/* ---- groups: JSON ------------------------------------------------------- */

static void gdev_json(FILE *f, const struct gm_group_view_dev *d, unsigned i)
{
    char uuid[48];
    gm_uuid_full(d->uuid, uuid, sizeof uuid);
    fprintf(f, "{\"device\":%u,\"uuid\":\"%s\"", i, uuid);
    jb(f, "physical", d->physical);
    jlimit(f, "limit", d->limit, d->limit == 0);
    jb(f, "used", d->used);
    jb(f, "peak", d->peak);
    ju(f, "reclaimed_bytes", d->reclaimed_bytes);
    fputc('}', f);
}

static void member_json(FILE *f, const struct gm_scan_group *g, unsigned i)
{
    const struct gm_group_view *v = &g->v;
    const struct gm_group_view_member *m = &v->member[i];
    uint64_t used = 0, share = 0;
    for (unsigned d = 0; d < v->ndev && d < GM_GROUP_MAX_DEVICES; d++)
        if (v->dev[d].present) {
            used += m->used[d];
            share += m->share[d];
        }
    /* "slot" first: a member object never starts like a process's. */
    fprintf(f, "{\"slot\":%d,\"pid\":%d,\"state\":\"%s\",\"weight\":%g",
            m->slot, m->pid, m->alive ? "live" : "dead", m->weight);
    ju(f, "waiting", m->waiting);
    ju(f, "joined_realtime_ns", m->joined_ns);
    fputs(",\"command\":", f);
    if (g->cmd[i][0])
        gm_json_str(f, g->cmd[i]);
    else
        fputs("null", f);
    jb(f, "used", used);
    jb(f, "share", share);
    fputs(",\"devices\":[", f);
    unsigned shown = 0;
    for (unsigned d = 0; d < v->ndev && d < GM_GROUP_MAX_DEVICES; d++) {
        if (!v->dev[d].present)
            continue;
        fprintf(f, "%s{\"device\":%u", shown++ ? "," : "", d);
        jb(f, "share", m->share[d]);
        jb(f, "used", m->used[d]);
        fputc('}', f);
    }
    fputs("]}", f);
}

static void group_json(FILE *f, const struct gm_scan_group *g)
{
    const struct gm_group_view *v = &g->v;
    uint64_t used = 0, peak = 0, limit = 0;
    bool unlimited = false, any = false;
    for (unsigned d = 0; d < v->ndev && d < GM_GROUP_MAX_DEVICES; d++) {
        const struct gm_group_view_dev *gd = &v->dev[d];
        if (!gd->present)
            continue;
        any = true;
        used += gd->used;
        peak += gd->peak;
        limit += gd->limit;
        unlimited |= gd->limit == 0;
    }
    char user[64];
    fputs("{\"group\":", f);
    gm_json_str(f, v->name);
    fputs(",\"path\":", f);
    gm_json_str(f, g->path);
    fputs(",\"user\":", f);
    gm_json_str(f, gm_user_name(g->uid, user, sizeof user));
    fprintf(f, ",\"uid\":%u,\"consistent\":%s", (unsigned)g->uid,
            v->consistent ? "true" : "false");
    ju(f, "live_members", gm_group_live_members(v));
    ju(f, "dead_members", gm_group_dead_members(v));
    jb(f, "used", used);
    jb(f, "peak", peak);
    jlimit(f, "limit", limit, unlimited || !any);
    ju(f, "joins", v->joins);
    ju(f, "reclaims", v->reclaims);
    ju(f, "reclaimed_bytes", v->reclaimed_bytes);
    ju(f, "repairs", v->repairs);
    ju(f, "waiters", v->waiters);
    ju(f, "created_realtime_ns", v->created_ns);
    fputs(",\"devices\":[", f);
    unsigned shown = 0;
    for (unsigned d = 0; d < v->ndev && d < GM_GROUP_MAX_DEVICES; d++) {
        if (!v->dev[d].present)
            continue;
        if (shown++)
            fputc(',', f);
        gdev_json(f, &v->dev[d], d);
    }
    fputs("],\"members\":[", f);
    for (unsigned i = 0; i < v->nmembers && i < GM_GROUP_MAX_MEMBERS; i++) {
        if (i)
            fputc(',', f);
        member_json(f, g, i);
    }
    fputs("]}", f);
}

void gm_gscan_print_json(FILE *f, const struct gm_gscan *gs)
{
    fputc('[', f);
    for (size_t i = 0; i < gs->n; i++) {
        if (i)
            fputc(',', f);
        group_json(f, &gs->groups[i]);
    }
    fputc(']', f);
}

/* ---- options ------------------------------------------------------------- */

/* Where a subcommand's help is: gpumem-top is a program of its own. */
static void help_ref(const char *cmd, char *buf, size_t n)
{
    if (strcmp(cmd, "top") == 0)
        snprintf(buf, n, "gpumem-top --help");
    else
        snprintf(buf, n, "gpumem %s --help", cmd);
}

int gm_opt_value(const char *cmd, int argc, char **argv, int *i,
                 const char *name, const char **val)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (a[n] != '\0')
        return 0;
    /* "--" ends the options: it is never the value of the one before. */
    if (*i + 1 >= argc || strcmp(argv[*i + 1], "--") == 0) {
        char ref[64];
        help_ref(cmd, ref, sizeof ref);
        fprintf(stderr, "gpumem: %s: option %s needs a value (%s)\n", cmd,
                name, ref);
        return -1;
    }
    *val = argv[++*i];
    return 1;
}

int gm_opt_flag(const char *cmd, const char *arg, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0 || (arg[n] != '\0' && arg[n] != '='))
        return 0;
    if (arg[n] == '\0')
        return 1;
    char ref[64];
    help_ref(cmd, ref, sizeof ref);
    fprintf(stderr, "gpumem: %s: option %s takes no value, not '%s' (%s)\n",
            cmd, name, arg + n + 1, ref);
    return -1;
}
