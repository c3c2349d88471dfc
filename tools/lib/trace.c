/*
 * tools/lib/trace.c — loading recordings and text traces, and telling a
 * section's running writer from a pid given again (trace.h).
 *
 * Invariants: a recording section is read to its header's count when it
 * was closed, else to its first all-zero record (a writer that ended
 * without closing, docs/trace.md); nothing past the bytes read is
 * trusted; a text line that does not parse (a field missing or extra,
 * a number with a sign, past its field's range or not a number) stops
 * the load with its number and the field; a paced replay never waits
 * longer than its gap bound for one event.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/base/clock.h"
#include "shim/base/mix.h"
#include "tools/lib/trace.h"

static const char *const op_names[GM_RO_COUNT] = {
    [GM_RO_NONE] = "none", [GM_RO_ALLOC] = "alloc", [GM_RO_PITCH] = "pitch",
    [GM_RO_MANAGED] = "managed", [GM_RO_ASYNC] = "aalloc",
    [GM_RO_POOL_ALLOC] = "palloc", [GM_RO_FREE] = "free",
    [GM_RO_FREE_ASYNC] = "afree", [GM_RO_CREATE] = "create",
    [GM_RO_RELEASE] = "release", [GM_RO_RETAIN] = "retain",
    [GM_RO_ARRAY] = "array", [GM_RO_ARRAY_DESTROY] = "array_destroy",
    [GM_RO_CTX] = "context", [GM_RO_POOL_TRIM] = "trim",
    [GM_RO_SYNC] = "sync", [GM_RO_LOST] = "lost",
    [GM_RO_MAP] = "map", [GM_RO_UNMAP] = "unmap",
};

const char *gm_rec_op_name(unsigned op)
{
    return op < GM_RO_COUNT && op_names[op] ? op_names[op] : "?";
}

bool gm_rec_op_allocates(unsigned op)
{
    switch (op) {
    case GM_RO_ALLOC: case GM_RO_PITCH: case GM_RO_MANAGED: case GM_RO_ASYNC:
    case GM_RO_POOL_ALLOC: case GM_RO_CREATE: case GM_RO_ARRAY:
        return true;
    default:
        return false;
    }
}

/* ---- peak --------------------------------------------------------------- */

/* What is held, by kind and key, in an open-addressing table: kind 0 is
 * an empty slot, or a removed one when `dead` (probes pass over it). A
 * mapping (HK_MAP, key its start) holds its length in size and its
 * handle in aux. The text reader keeps its processes in one too (HK_PID,
 * key the pid, aux the process's index: a search of the list on every
 * line was quadratic). */
enum { HK_PTR = 1, HK_HANDLE, HK_ARRAY, HK_MAP, HK_PID };
struct held {
    uint64_t key, size, aux;
    uint32_t refs;
    uint8_t kind, dead, dev;
};
struct heldtab { struct held *v; size_t cap, used; };

static size_t held_hash(uint64_t key, unsigned kind, size_t cap)
{
    /* keys from a file: mixed whole (a multiplication's middle bits are
     * the same for every multiple of 2^40, one probe chain for all) */
    return (size_t)gm_mix64(key ^ ((uint64_t)kind << 60)) & (cap - 1);
}

static struct held *held_find(struct heldtab *t, unsigned kind, uint64_t key)
{
    if (t->cap == 0)
        return NULL;
    for (size_t i = held_hash(key, kind, t->cap);; i = (i + 1) & (t->cap - 1)) {
        struct held *h = &t->v[i];
        if (h->kind == 0 && !h->dead)
            return NULL;
        if (h->kind == kind && h->key == key)
            return h;
    }
}

/* Rebuild the table at `cap` slots, without the removed ones. */
static int held_rehash(struct heldtab *t, size_t cap)
{
    struct held *v = calloc(cap, sizeof *v);
    if (v == NULL)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < t->cap; i++) {
        if (t->v[i].kind == 0)
            continue;
        size_t j = held_hash(t->v[i].key, t->v[i].kind, cap);
        while (v[j].kind != 0)
            j = (j + 1) & (cap - 1);
        v[j] = t->v[i];
        n++;
    }
    free(t->v);
    t->v = v;
    t->cap = cap;
    t->used = n;
    return 0;
}

/* A new entry with one reference, on device dev; NULL without memory.
 * `used` counts entries and removed slots, at most half the table. */
static struct held *held_put(struct heldtab *t, unsigned kind, uint64_t key,
                             uint64_t size, uint64_t aux, unsigned dev)
{
    if ((t->used + 1) * 2 > t->cap) {
        size_t live = 0;
        for (size_t i = 0; i < t->cap; i++)
            live += t->v[i].kind != 0;
        size_t cap = t->cap == 0 ? 1024
                     : (live + 1) * 4 > t->cap ? t->cap * 2 : t->cap;
        if (held_rehash(t, cap) != 0)
            return NULL;
    }
    size_t i = held_hash(key, kind, t->cap);
    while (t->v[i].kind != 0 || t->v[i].dead)
        i = (i + 1) & (t->cap - 1);
    t->v[i] = (struct held){ key, size, aux, 1, (uint8_t)kind, 0,
                             (uint8_t)dev };
    t->used++;
    return &t->v[i];
}

static void held_remove(struct held *h)
{
    h->kind = 0;
    h->dead = 1;
}

/* Drop a reference; when it was the last one, what it held leaves its
 * device's live bytes. */
static void held_drop(struct heldtab *t, unsigned kind, uint64_t key,
                      uint64_t *live)
{
    struct held *h = held_find(t, kind, key);
    if (h == NULL || --h->refs > 0)
        return;
    held_remove(h);
    live[h->dev] -= h->size;
}

static unsigned alloc_kind(unsigned op)
{
    return op == GM_RO_CREATE ? HK_HANDLE : op == GM_RO_ARRAY ? HK_ARRAY
                                                              : HK_PTR;
}

/* cuMemUnmap(start, size): the mappings back to back from start go, each
 * dropping its handle's reference. */
static void unmapped(struct heldtab *t, uint64_t start, uint64_t size,
                     uint64_t *live)
{
    uint64_t at = start;
    struct held *m;
    while (at - start < size && (m = held_find(t, HK_MAP, at)) != NULL) {
        uint64_t len = m->size, handle = m->aux;
        held_remove(m);
        held_drop(t, HK_HANDLE, handle, live);
        if (len == 0)
            break;
        at += len;
    }
}

unsigned gm_tev_device(const struct gm_tev *e, unsigned *cur)
{
    if (e->dev < GM_TRACE_DEVICES)
        *cur = e->dev;
    return *cur;
}

unsigned gm_trace_devices(const struct gm_trace *t, const struct gm_tproc *p,
                          bool used[GM_TRACE_DEVICES])
{
    unsigned top = 0;
    memset(used, 0, GM_TRACE_DEVICES * sizeof *used);
    for (size_t i = 0; i < t->nproc; i++) {
        const struct gm_tproc *q = &t->proc[i];
        unsigned cur = 0;
        if (p != NULL && q != p)
            continue;
        for (size_t j = 0; j < q->count; j++) {
            const struct gm_tev *e = &t->ev[q->first + j];
            unsigned d = gm_tev_device(e, &cur);
            bool issued = gm_rec_op_allocates(e->op)
                              ? e->rc == 0 || e->rc == 2 /* out of memory */
                              : e->op == GM_RO_CTX && e->rc == 0 &&
                                    e->dev < GM_TRACE_DEVICES;
            if (issued && !used[d]) {
                used[d] = true;
                top = d + 1 > top ? d + 1 : top;
            }
        }
    }
    if (top == 0) {
        used[0] = true;
        top = 1;
    }
    return top;
}

uint64_t gm_trace_peak(const struct gm_trace *t, const struct gm_tproc *p)
{
    struct heldtab tab = { NULL, 0, 0 };
    uint64_t live[GM_TRACE_DEVICES] = { 0 }, peak = 0;
    unsigned cur = 0;
    for (size_t i = 0; i < p->count; i++) {
        const struct gm_tev *e = &t->ev[p->first + i];
        unsigned d = gm_tev_device(e, &cur);
        struct held *h;
        if (e->rc != 0)
            continue;
        switch (e->op) {
        case GM_RO_FREE: case GM_RO_FREE_ASYNC:
            held_drop(&tab, HK_PTR, e->addr, live);
            break;
        case GM_RO_RELEASE:
            held_drop(&tab, HK_HANDLE, e->addr, live);
            break;
        case GM_RO_ARRAY_DESTROY:
            held_drop(&tab, HK_ARRAY, e->addr, live);
            break;
        case GM_RO_RETAIN:
            if ((h = held_find(&tab, HK_HANDLE, e->addr)) != NULL)
                h->refs++;
            break;
        case GM_RO_MAP: /* size, addr = handle, aux = start */
            if (held_find(&tab, HK_HANDLE, e->addr) != NULL &&
                held_put(&tab, HK_MAP, e->aux, e->size, e->addr, d) != NULL)
                held_find(&tab, HK_HANDLE, e->addr)->refs++;
            break;
        case GM_RO_UNMAP: /* size, aux = start */
            unmapped(&tab, e->aux, e->size, live);
            break;
        default:
            if (gm_rec_op_allocates(e->op) &&
                held_put(&tab, alloc_kind(e->op), e->addr, e->size, 0, d)) {
                live[d] += e->size;
                peak = live[d] > peak ? live[d] : peak;
            }
            break;
        }
    }
    free(tab.v);
    return peak;
}

/* ---- pacing ------------------------------------------------------------- */

/* An event's time on the clock its processes share. */
static uint64_t ev_time(const struct gm_trace *t, const struct gm_tproc *p,
                        const struct gm_tev *e)
{
    if (t->text)
        return e->t_ns;
    return p->start_ns > UINT64_MAX - e->t_ns ? UINT64_MAX
                                              : p->start_ns + e->t_ns;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int gm_pace_plan(const struct gm_trace *t, const struct gm_tproc *p,
                 uint64_t gap_ns, struct gm_pace *out)
{
    memset(out, 0, sizeof *out);
    size_t n = p != NULL ? p->count : t->n, k = 0;
    uint64_t *v = malloc((n ? n : 1) * sizeof *v);
    if (v == NULL)
        return -1;
    for (size_t i = 0; i < t->nproc; i++) {
        const struct gm_tproc *q = &t->proc[i];
        if (p == NULL || q == p)
            for (size_t j = 0; j < q->count; j++)
                v[k++] = ev_time(t, q, &t->ev[q->first + j]);
    }
    qsort(v, k, sizeof *v, cmp_u64);
    out->zero = k ? v[0] : 0;
    out->end = malloc((k ? k : 1) * sizeof *out->end);
    out->cut = malloc((k ? k : 1) * sizeof *out->cut);
    if (out->end == NULL || out->cut == NULL) {
        free(v);
        gm_pace_free(out);
        return -1;
    }
    uint64_t cut = 0;
    for (size_t i = 1; i < k; i++)
        if (v[i] - v[i - 1] > gap_ns) {
            cut += v[i] - v[i - 1] - gap_ns;
            out->end[out->n] = v[i];
            out->cut[out->n++] = cut;
        }
    free(v);
    return 0;
}

uint64_t gm_pace_at(const struct gm_pace *pl, const struct gm_trace *t,
                    const struct gm_tproc *p, const struct gm_tev *e)
{
    uint64_t at = ev_time(t, p, e);
    if (at <= pl->zero)
        return 0;
    size_t lo = 0, hi = pl->n; /* the shortened stretches ending by at */
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (pl->end[m] <= at)
            lo = m + 1;
        else
            hi = m;
    }
    return at - pl->zero - (lo ? pl->cut[lo - 1] : 0);
}

void gm_pace_free(struct gm_pace *pl)
{
    free(pl->end);
    free(pl->cut);
    memset(pl, 0, sizeof *pl);
}

static int push_ev(struct gm_trace *t, const struct gm_tev *e)
{
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 4096;
        struct gm_tev *p = realloc(t->ev, nc * sizeof *p);
        if (p == NULL)
            return -1;
        t->ev = p;
        t->cap = nc;
    }
    t->ev[t->n++] = *e;
    return 0;
}

static struct gm_tproc *push_proc(struct gm_trace *t)
{
    struct gm_tproc *p = realloc(t->proc, (t->nproc + 1) * sizeof *p);
    if (p == NULL)
        return NULL;
    t->proc = p;
    memset(&p[t->nproc], 0, sizeof *p);
    p[t->nproc].first = t->n;
    return &p[t->nproc++];
}

/* ---- recordings --------------------------------------------------------- */

/* A section that ends inside a record, or (counted) before its count:
 * want 0 for an unclosed one, which has no count. */
static void cut_short(char *err, size_t cap, uint64_t off, uint32_t pid,
                      uint64_t got, uint64_t want)
{
    if (want != 0)
        snprintf(err, cap, "offset %llu: the section of pid %u ends after "
                 "%llu of its %llu records (truncated file)",
                 (unsigned long long)off, pid, (unsigned long long)got,
                 (unsigned long long)want);
    else
        snprintf(err, cap, "offset %llu: the unclosed section of pid %u "
                 "ends inside a record, after %llu whole record%s "
                 "(truncated file)", (unsigned long long)off, pid,
                 (unsigned long long)got, got == 1 ? "" : "s");
}

static int load_binary(FILE *f, struct gm_trace *t, char *err, size_t cap)
{
    uint64_t off = 0;
    for (;;) {
        struct gm_rec_header h;
        size_t k = fread(&h, 1, sizeof h, f);
        if (k == 0)
            return 0;
        if (k != sizeof h || h.magic != GM_REC_MAGIC) {
            snprintf(err, cap, "offset %llu: not a gpumem recording section "
                     "(bad or truncated header)", (unsigned long long)off);
            return -1;
        }
        if (h.version != GM_REC_VERSION) {
            snprintf(err, cap, "offset %llu: recording version %u is not "
                     "version %u; use a gpumem of the same version",
                     (unsigned long long)off, h.version, GM_REC_VERSION);
            return -1;
        }
        if (h.header_size != sizeof h || h.record_size != GM_REC_SIZE) {
            snprintf(err, cap, "offset %llu: a version %u section with a "
                     "header of %u bytes and records of %u (version %u has "
                     "%zu and %u): damaged or not a gpumem recording",
                     (unsigned long long)off, h.version, h.header_size,
                     h.record_size, GM_REC_VERSION, sizeof h, GM_REC_SIZE);
            return -1;
        }
        off += sizeof h;
        struct gm_tproc *p = push_proc(t);
        if (p == NULL)
            goto nomem;
        p->pid = h.pid;
        p->ppid = h.ppid;
        p->start_ns = h.start_ns;
        p->lost = h.lost;
        p->first_lost = h.first_lost_seq;
        p->closed = (h.flags & GM_REC_F_CLOSED) != 0;
        bool counted = (h.flags & (GM_REC_F_CLOSED | GM_REC_F_COUNTED)) != 0;
        uint64_t want = counted ? h.count : UINT64_MAX;
        uint64_t got = 0;
        while (got < want) {
            struct gm_rec r;
            k = fread(&r, 1, sizeof r, f);
            if (k == 0 && !counted)
                break;
            if (k != sizeof r) {
                cut_short(err, cap, off, h.pid, got, counted ? want : 0);
                return -1;
            }
            off += sizeof r;
            if (r.op == GM_RO_NONE) {
                if (counted) {
                    snprintf(err, cap, "offset %llu: an empty record inside "
                             "the closed section of pid %u",
                             (unsigned long long)off - sizeof r, h.pid);
                    return -1;
                }
                /* unclosed: the rest of the last window is zeros */
                while (fread(&r, 1, sizeof r, f) == sizeof r &&
                       r.op == GM_RO_NONE)
                    off += sizeof r;
                if (!feof(f)) {
                    snprintf(err, cap, "offset %llu: data after the end of "
                             "the unclosed section of pid %u",
                             (unsigned long long)off, h.pid);
                    return -1;
                }
                break;
            }
            if (r.op >= GM_RO_COUNT) {
                snprintf(err, cap, "offset %llu: unknown operation %u",
                         (unsigned long long)off - sizeof r, r.op);
                return -1;
            }
            struct gm_tev e = {
                .seq = r.seq, .t_ns = r.t_ns, .size = r.size, .addr = r.addr,
                .aux = r.aux, .aux2 = r.aux2, .rc = r.rc, .tid = r.tid,
                .dt_ns = r.dt_ns, .op = r.op, .dev = r.dev, .flags = r.flags,
            };
            if (push_ev(t, &e) != 0)
                goto nomem;
            got++;
        }
        t->proc[t->nproc - 1].count = t->n - t->proc[t->nproc - 1].first;
    }
nomem:
    snprintf(err, cap, "out of memory");
    return -1;
}

/* ---- text traces -------------------------------------------------------- */

static int text_op(const char *s)
{
    static const struct { const char *name; int op; } m[] = {
        { "alloc", GM_RO_ALLOC }, { "free", GM_RO_FREE },
        { "aalloc", GM_RO_ASYNC }, { "afree", GM_RO_FREE_ASYNC },
        { "create", GM_RO_CREATE }, { "release", GM_RO_RELEASE },
        { "managed", GM_RO_MANAGED },
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (strcmp(s, m[i].name) == 0)
            return m[i].op;
    return -1;
}

/* One field of a text line: what it is called and what it accepts. */
struct tfield {
    const char *name, *accepts;
    int base;           /* 10, or 16 (an optional 0x before the digits) */
    uint64_t max;
};

static const struct tfield tfields[] = {
    { "pid", "a process id (0 to 4294967295)", 10, UINT32_MAX },
    { "t_ns", "a time in ns (0 to 18446744073709551615)", 10, UINT64_MAX },
    { "op", NULL, 0, 0 },
    { "size", "a size in bytes (0 to 18446744073709551615)", 10,
      UINT64_MAX },
    { "ptr", "a hexadecimal pointer or handle (0x0 to 0xffffffffffffffff)",
      16, UINT64_MAX },
    { "rc", "a CUresult (0 to 4294967295)", 10, UINT32_MAX },
    { "dt_ns", "a duration in ns (0 to 18446744073709551615)", 10,
      UINT64_MAX },
};
#define TFIELDS (sizeof tfields / sizeof tfields[0])

/* s as an unsigned number of field f: digits only (no sign, no blank),
 * within f's range. 0, or -1. */
static int text_num(const char *s, const struct tfield *f, uint64_t *out)
{
    if (f->base == 16 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    if (*s == '\0')
        return -1;
    for (const char *c = s; *c; c++)
        if (f->base == 16 ? strchr("0123456789abcdefABCDEF", *c) == NULL
                          : (*c < '0' || *c > '9'))
            return -1;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, f->base);
    if (errno == ERANGE || v > f->max)
        return -1;
    *out = v;
    return 0;
}

/* Split a line into its 7 fields (blanks between them) and read the
 * numbers into v (indexed as tfields; v[2] unused, *op the name). 0, or
 * -1 with the message in err. */
static int text_fields(char *s, unsigned long lineno, uint64_t v[TFIELDS],
                       const char **op, char *err, size_t cap)
{
    char *tok[TFIELDS + 1], *save = NULL;
    size_t n = 0;
    for (char *t = strtok_r(s, " \t\r\n", &save); t != NULL && n <= TFIELDS;
         t = strtok_r(NULL, " \t\r\n", &save))
        tok[n++] = t;
    if (n != TFIELDS) {
        char got[32];
        snprintf(got, sizeof got, n > TFIELDS ? "more than %zu" : "%zu",
                 n > TFIELDS ? TFIELDS : n);
        snprintf(err, cap, "line %lu: %s fields, not the %zu of 'pid t_ns "
                 "op size ptr rc dt_ns' (e.g. '416 48 alloc 2097152 "
                 "0x7f29dde00000 0 129163')", lineno, got, TFIELDS);
        return -1;
    }
    for (size_t i = 0; i < TFIELDS; i++) {
        if (tfields[i].accepts == NULL) {
            *op = tok[i];
            continue;
        }
        if (text_num(tok[i], &tfields[i], &v[i]) != 0) {
            snprintf(err, cap, "line %lu: %s '%.40s' is not %s", lineno,
                     tfields[i].name, tok[i], tfields[i].accepts);
            return -1;
        }
    }
    return 0;
}

/* The longest data line taken (comment lines may be any length). */
#define TEXT_LINE_MAX 511

/* Group the events by process, stable (several pids interleave in one
 * file): a counting sort on the process index each event holds in seq. */
static int group_by_process(struct gm_trace *t)
{
    if (t->nproc == 1)
        t->proc[0].count = t->n;
    if (t->nproc <= 1)
        return 0;
    struct gm_tev *s = malloc(t->n * sizeof *s);
    size_t *at = calloc(t->nproc, sizeof *at);
    if (s == NULL || at == NULL) {
        free(s);
        free(at);
        return -1;
    }
    for (size_t i = 0; i < t->n; i++)
        t->proc[t->ev[i].seq].count++;
    size_t o = 0;
    for (size_t pi = 0; pi < t->nproc; pi++) {
        t->proc[pi].first = at[pi] = o;
        o += t->proc[pi].count;
    }
    for (size_t i = 0; i < t->n; i++)
        s[at[t->ev[i].seq]++] = t->ev[i];
    free(at);
    free(t->ev);
    t->ev = s;
    t->cap = t->n;
    return 0;
}

/* One line of f into buf (at most cap - 1 bytes kept, NUL-terminated,
 * without its newline), in bounded memory whatever its length: *nul when
 * it holds a NUL byte, *more when bytes other than blanks were past the
 * room. False at the end of the file. */
static bool text_line(FILE *f, char *buf, size_t cap, bool *nul, bool *more)
{
    size_t n = 0;
    int c;
    bool any = false;
    *nul = *more = false;
    while ((c = getc_unlocked(f)) != EOF) {
        any = true;
        if (c == '\n')
            break;
        if (c == '\0')
            *nul = true;
        if (n + 1 < cap)
            buf[n++] = (char)c;
        else if (c != ' ' && c != '\t' && c != '\r')
            *more = true;
    }
    buf[n] = '\0';
    return any;
}

static int load_text(FILE *f, struct gm_trace *t, char *err, size_t cap)
{
    char line[TEXT_LINE_MAX + 1];
    bool nul, more;
    unsigned long lineno = 0;
    struct heldtab pids = { NULL, 0, 0 };
    int rc = -1;
    t->text = true;
    while (text_line(f, line, sizeof line, &nul, &more)) {
        lineno++;
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '#') /* a comment, of any length */
            continue;
        if (nul) {
            snprintf(err, cap, "line %lu: holds a NUL byte (a text trace is "
                     "lines of text)", lineno);
            goto out;
        }
        if (more) {
            snprintf(err, cap, "line %lu: longer than %d bytes", lineno,
                     TEXT_LINE_MAX);
            goto out;
        }
        if (*s == '\r' || *s == '\0')
            continue;
        uint64_t v[TFIELDS];
        const char *op = NULL;
        if (text_fields(s, lineno, v, &op, err, cap) != 0)
            goto out;
        uint32_t pid = (uint32_t)v[0];
        uint64_t ts = v[1], size = v[3], addr = v[4], rc_v = v[5], dt = v[6];
        int o = text_op(op);
        if (o < 0) {
            snprintf(err, cap, "line %lu: unknown op '%.40s'; use alloc, free, "
                     "aalloc, afree, create, release or managed", lineno, op);
            goto out;
        }
        /* Processes in order of first appearance; events keep file order. */
        const struct held *known = held_find(&pids, HK_PID, pid);
        size_t pi = known != NULL ? (size_t)known->aux : t->nproc;
        if (known == NULL) {
            struct gm_tproc *p = push_proc(t);
            if (p == NULL || held_put(&pids, HK_PID, pid, 0, pi, 0) == NULL)
                goto nomem;
            p->pid = pid;
            p->closed = true;
        }
        struct gm_tev e = {
            .t_ns = ts, .size = size, .addr = addr, .rc = (uint32_t)rc_v,
            .dt_ns = dt > UINT32_MAX ? UINT32_MAX : (uint32_t)dt,
            .op = (uint16_t)o, .dev = 0,
        };
        if (push_ev(t, &e) != 0)
            goto nomem;
        t->ev[t->n - 1].seq = (uint64_t)pi; /* process index, fixed below */
    }
    if (ferror(f)) {
        snprintf(err, cap, "read error: %s", strerror(errno));
        goto out;
    }
    if (group_by_process(t) != 0)
        goto nomem;
    for (size_t pi = 0; pi < t->nproc; pi++)
        for (size_t i = 0; i < t->proc[pi].count; i++)
            t->ev[t->proc[pi].first + i].seq = i + 1;
    rc = 0;
    goto out;
nomem:
    snprintf(err, cap, "out of memory");
out:
    free(pids.v);
    return rc;
}

/* ---- writers ------------------------------------------------------------ */

#define WRITER_SLACK_NS 1000000000ull /* a second: ticks, clock offset */

/* Whether process pid runs as effective user uid (the second figure of
 * the Uid line of /proc/<pid>/status; the directory's owner would be
 * root for a process that is not dumpable). */
static bool runs_as(uint32_t pid, uid_t uid)
{
    char path[32], line[256];
    snprintf(path, sizeof path, "/proc/%u/status", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    bool yes = false;
    unsigned long r, e;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2) {
            yes = e == (unsigned long)uid;
            break;
        }
    fclose(f);
    return yes;
}

bool gm_rec_writer_running(uint32_t pid, uint64_t start_ns)
{
    uint64_t ticks;
    if (pid == 0 || pid > INT_MAX || !gm_proc_alive((int)pid, 0) ||
        !runs_as(pid, geteuid()) || gm_proc_start_ticks((int)pid, &ticks) != 0)
        return false;
    uint64_t began = gm_proc_start_realtime_ns(ticks);
    return began != 0 && began <= start_ns + WRITER_SLACK_NS;
}

int gm_trace_load(const char *path, struct gm_trace *t, char *err,
                  size_t errcap)
{
    memset(t, 0, sizeof *t);
    bool in = strcmp(path, "-") == 0;
    FILE *f = in ? tmpfile() : fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errcap, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    if (in) { /* stdin may be a pipe: keep a seekable copy */
        char buf[65536];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, stdin)) > 0)
            if (fwrite(buf, 1, got, f) != got)
                break;
        rewind(f);
    }
    uint64_t magic = 0;
    size_t k = fread(&magic, 1, sizeof magic, f);
    int rc;
    if (k == sizeof magic && magic == GM_REC_MAGIC) {
        rewind(f);
        rc = load_binary(f, t, err, errcap);
    } else {
        rewind(f);
        rc = load_text(f, t, err, errcap);
    }
    fclose(f);
    if (rc != 0)
        gm_trace_free(t);
    return rc;
}

void gm_trace_free(struct gm_trace *t)
{
    free(t->ev);
    free(t->proc);
    memset(t, 0, sizeof *t);
}
