/*
 * tools/lib/reader.c — the reader library of the telemetry segments (see
 * tools/lib/reader.h; layout in shim/telemetry/abi.h, contract in docs/abi.md).
 *
 * Invariants: nothing in a segment is used before validate() accepted it;
 * the geometry it accepted is kept in struct gm_seg and every address is
 * computed from that copy, never from the mapping again; every loop is
 * bounded by validated sizes or the caller's buffer; every access to a
 * mapped file runs under guarded(), which turns the SIGBUS of a file
 * truncated after mapping into an error return.
 */
#include "shim/base/safefile.h"
#include "shim/base/msg.h"
#include "tools/lib/reader.h"
#include "shim/telemetry/marks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "shim/base/clock.h"

#define LD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define GUARD_FAULT INT_MIN

/* The largest segment any valid geometry describes. */
#define MAX_SEGMENT                                                         \
    (sizeof(struct gm_abi_header) +                                         \
     (size_t)GM_ABI_MAX_DEVICES * sizeof(struct gm_abi_dev) +               \
     (size_t)GM_ABI_RING_MAX * sizeof(struct gm_abi_record) +              \
     (size_t)GM_ABI_MARKS * sizeof(struct gm_abi_mark) +                   \
     (size_t)GM_ABI_HIST_DEVICES * sizeof(struct gm_abi_hist))

/* ---- SIGBUS guard ------------------------------------------------------- */

static __thread sigjmp_buf *guard_jb;
static struct sigaction prev_bus;
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    sigjmp_buf *jb = guard_jb;
    if (jb != NULL) {
        guard_jb = NULL;
        siglongjmp(*jb, 1);
    }
    /* Not a fault of ours: hand the signal to whoever had it before.
     * Returning re-runs the faulting access, which now reaches it. */
    sigaction(SIGBUS, &prev_bus, NULL);
    if (si == NULL || si->si_code <= 0)
        raise(sig); /* sent, not a fault: deliver it again */
}

static void install_bus(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &prev_bus);
}

/* Runs fn(arg) with SIGBUS turned into the return value GUARD_FAULT. */
static int guarded(int (*fn)(void *), void *arg)
{
    sigjmp_buf jb;
    sigjmp_buf *prev = guard_jb;
    if (sigsetjmp(jb, 1) != 0) {
        guard_jb = prev;
        return GUARD_FAULT;
    }
    guard_jb = &jb;
    int r = fn(arg);
    guard_jb = prev;
    return r;
}

/* ---- validation --------------------------------------------------------- */

static bool pow2(uint64_t v)
{
    return v != 0 && (v & (v - 1)) == 0;
}

/* Checks n bytes at p; on success fills the geometry of s (if non-NULL).
 * Each header field is loaded once. */
static int validate(const unsigned char *p, size_t n, struct gm_seg *s,
                    char *err, size_t cap)
{
    const struct gm_abi_header *h = (const struct gm_abi_header *)p;
    if (n < sizeof h->magic + sizeof h->abi_version) {
        gm_msgf(err, cap, "too small for a segment: %zu bytes", n);
        return -1;
    }
    uint64_t magic = LD_ACQ(&h->magic); /* pairs with the writer's release */
    if (magic == 0) {
        gm_msgf(err, cap, "not initialised yet (magic 0)");
        return -1;
    }
    if (magic != GM_ABI_MAGIC) {
        gm_msgf(err, cap, "bad magic: not a gpumem segment");
        return -1;
    }
    uint32_t ver = h->abi_version;
    if (ver != GM_ABI_VERSION) {
        gm_msgf(err, cap, "ABI version %u; this tool reads version %u", ver,
                GM_ABI_VERSION);
        return -1;
    }
    if (n < sizeof *h) {
        gm_msgf(err, cap, "truncated: %zu bytes, smaller than the header",
                n);
        return -1;
    }
    uint32_t hs = h->header_size, ds = h->dev_size, rs = h->record_size;
    uint32_t slots = h->dev_slots, rcap = h->ring_capacity;
    uint64_t doff = h->dev_offset, roff = h->ring_offset;
    uint64_t total = h->total_size;
    uint32_t pid = h->pid;
    if (hs != sizeof *h || ds != sizeof(struct gm_abi_dev) ||
        rs != sizeof(struct gm_abi_record)) {
        gm_msgf(err, cap, "layout sizes header %u, device %u, record %u; "
                "expected %zu, %zu, %zu", hs, ds, rs, sizeof *h,
                sizeof(struct gm_abi_dev), sizeof(struct gm_abi_record));
        return -1;
    }
    if (slots < 1 || slots > GM_ABI_MAX_DEVICES) {
        gm_msgf(err, cap, "device slots %u outside 1..%u", slots,
                GM_ABI_MAX_DEVICES);
        return -1;
    }
    if (!pow2(rcap) || rcap < GM_ABI_RING_MIN || rcap > GM_ABI_RING_MAX) {
        gm_msgf(err, cap, "ring capacity %u is not a power of two in "
                "%u..%u", rcap, GM_ABI_RING_MIN, GM_ABI_RING_MAX);
        return -1;
    }
    uint64_t want_roff = (uint64_t)hs + (uint64_t)slots * ds;
    uint64_t want_hoff = want_roff + (uint64_t)rcap * rs;
    uint32_t hslots = h->hist_slots;
    uint32_t want_hslots =
        slots < GM_ABI_HIST_DEVICES ? slots : GM_ABI_HIST_DEVICES;
    uint64_t want_hsize =
        (uint64_t)GM_ABI_MARKS * sizeof(struct gm_abi_mark) +
        (uint64_t)want_hslots * sizeof(struct gm_abi_hist);
    if (hslots != want_hslots || h->hist_tiers != GM_ABI_HIST_TIERS ||
        h->hist_buckets != GM_ABI_HIST_BUCKETS ||
        h->hist_bucket_size != sizeof(struct gm_abi_bucket) ||
        h->marks_capacity != GM_ABI_MARKS ||
        h->hist_dev_size != sizeof(struct gm_abi_hist)) {
        gm_msgf(err, cap, "history geometry (%u slots, %u tiers of %u "
                "buckets of %u bytes, %u marks, %u bytes a device) differs "
                "from this tool's (%u, %u, %u, %zu, %u, %zu)", hslots,
                h->hist_tiers, h->hist_buckets, h->hist_bucket_size,
                h->marks_capacity, h->hist_dev_size, want_hslots,
                GM_ABI_HIST_TIERS, GM_ABI_HIST_BUCKETS,
                sizeof(struct gm_abi_bucket), GM_ABI_MARKS,
                sizeof(struct gm_abi_hist));
        return -1;
    }
    uint64_t want_total = want_hoff + want_hsize;
    if (doff != hs || roff != want_roff || h->hist_offset != want_hoff ||
        h->hist_size != want_hsize || total != want_total) {
        gm_msgf(err, cap, "inconsistent offsets (devices %llu, ring %llu, "
                "size %llu)", (unsigned long long)doff,
                (unsigned long long)roff, (unsigned long long)total);
        return -1;
    }
    if (n < total) {
        gm_msgf(err, cap, "truncated: %zu bytes, the header says %llu", n,
                (unsigned long long)total);
        return -1;
    }
    if (memchr(h->cmdline, '\0', sizeof h->cmdline) == NULL ||
        memchr(h->policy, '\0', sizeof h->policy) == NULL) {
        gm_msgf(err, cap, "unterminated command line or policy string");
        return -1;
    }
    if (pid == 0 || pid > INT_MAX) {
        gm_msgf(err, cap, "bad pid %u", pid);
        return -1;
    }
    if (s != NULL) {
        s->pid = pid;
        s->start_ticks = h->start_ticks;
        s->dev_slots = slots;
        s->ring_capacity = rcap;
        s->dev_offset = doff;
        s->ring_offset = roff;
        s->hist_offset = want_hoff;
        s->hist_slots = hslots;
        s->total_size = total;
    }
    return 0;
}

int gm_seg_validate(const void *p, size_t n, char *err, size_t errcap)
{
    if (p == NULL || ((uintptr_t)p & 63u) != 0) {
        gm_msgf(err, errcap, "image not 64-byte aligned");
        return -1;
    }
    return validate(p, n, NULL, err, errcap);
}

/* ---- open / close ------------------------------------------------------- */

static void seg_reset(struct gm_seg *s)
{
    memset(s, 0, offsetof(struct gm_seg, head));
    s->head_len = 0;
    s->fd = -1;
}

int gm_seg_open_mem(struct gm_seg *s, const void *p, size_t n, char *err,
                    size_t errcap)
{
    seg_reset(s);
    if (gm_seg_validate(p, n, err, errcap) != 0)
        return -1;
    validate(p, n, s, NULL, 0);
    s->base = p;
    s->len = n;
    s->uid = getuid();
    return 0;
}

/* "<digits>" without a leading zero, 1..max; false otherwise. n bytes. */
static bool parse_num(const char *q, size_t n, unsigned long long max,
                      unsigned long long *out)
{
    if (n == 0 || n > 20 || q[0] < '1' || q[0] > '9')
        return false;
    unsigned long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (q[i] < '0' || q[i] > '9')
            return false;
        unsigned d = (unsigned)(q[i] - '0');
        if (v > (max - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* "<pid>" or "<pid>.ns<inode>" (what follows "<prefix>."). */
static bool parse_id(const char *q, struct gm_seg_id *id)
{
    const char *dot = strchr(q, '.');
    unsigned long long pid, ns = 0;
    size_t pn = dot ? (size_t)(dot - q) : strlen(q);
    if (!parse_num(q, pn, INT_MAX, &pid))
        return false;
    if (dot != NULL && (strncmp(dot, ".ns", 3) != 0 ||
                        !parse_num(dot + 3, strlen(dot + 3), ~0ull, &ns)))
        return false;
    id->pid = (int)pid;
    id->pidns = ns;
    return true;
}

/* The last '.' in [b, e), or NULL. */
static const char *last_dot(const char *b, const char *e)
{
    while (e > b)
        if (*--e == '.')
            return e;
    return NULL;
}

/* The id a segment file's name gives: "....<pid>" or "....<pid>.ns<inode>"
 * (pid 0: the name ends in neither; pidns 0: no ".ns<inode>"). */
static struct gm_seg_id name_id(const char *path)
{
    struct gm_seg_id id = { 0, 0 };
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *end = base + strlen(base), *dot = last_dot(base, end);
    unsigned long long v;
    if (dot != NULL && strncmp(dot + 1, "ns", 2) == 0 &&
        parse_num(dot + 3, (size_t)(end - dot - 3), ~0ull, &v)) {
        id.pidns = v;
        end = dot;
        dot = last_dot(base, end);
    }
    if (dot != NULL &&
        parse_num(dot + 1, (size_t)(end - dot - 1), INT_MAX, &v))
        id.pid = (int)v;
    return id;
}

/* A file named for a pid holds that process's header: its pid, and its
 * pid namespace (the name's for a ".ns<inode>" name; for a plain name the
 * initial one, or unknown). Else it is a copy or another process's file
 * under a name it does not own: refused, with both pids (namespaces). */
static int name_matches(const struct gm_abi_header *h, struct gm_seg_id id,
                        char *why, size_t cap)
{
    if (id.pid == 0)
        return 0;
    if (h->pid != (uint32_t)id.pid) {
        gm_msgf(why, cap, "the header's pid %u is not the name's pid %d "
                "(a copy, or another process's segment)", h->pid, id.pid);
        return -1;
    }
    uint64_t ns = h->ident.pidns;
    if (id.pidns != 0 && ns != id.pidns) {
        gm_msgf(why, cap, "the header's pid namespace %llu is not the "
                "name's %llu (a copy, or another process's segment)",
                (unsigned long long)ns, (unsigned long long)id.pidns);
        return -1;
    }
    if (id.pidns == 0 && ns != 0 && ns != GM_PIDNS_INIT) {
        gm_msgf(why, cap, "the header's pid namespace %llu is not the "
                "initial one a plain name stands for (a copy, or another "
                "process's segment)", (unsigned long long)ns);
        return -1;
    }
    return 0;
}

int gm_seg_open_path(struct gm_seg *s, const char *path, char *err,
                     size_t errcap)
{
    seg_reset(s);
    snprintf(s->path, sizeof s->path, "%s", path);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        gm_msgf(err, errcap, "%s: %s", path,
                errno == ELOOP ? "is a symbolic link; not following it"
                               : strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
        gm_msgf(err, errcap, "%s: not a regular non-empty file", path);
        close(fd);
        return -1;
    }
    size_t len = (uint64_t)st.st_size > MAX_SEGMENT ? MAX_SEGMENT
                                                    : (size_t)st.st_size;
    /* The header is validated from a copy; device blocks are copied when
     * snapshotting and the ring is mapped only when events are read, so
     * listing many processes costs a few system calls each. */
    const size_t hs = sizeof(struct gm_abi_header);
    size_t hn = len < sizeof s->head ? len : sizeof s->head;
    char why[200] = "";
    if (!gm_pread_all(fd, s->head, hn, 0)) {
        gm_msgf(err, errcap, "%s: truncated while reading", path);
        close(fd);
        seg_reset(s);
        return -1;
    }
    /* validate() reads only the header (never past hn: the sizes it checks
     * first keep it there) and checks the file's size against the
     * geometry. */
    struct gm_seg_id nid = name_id(path);
    if (validate(s->head, hn < hs ? hn : len, s, why, sizeof why) != 0 ||
        name_matches((const struct gm_abi_header *)s->head, nid, why,
                     sizeof why) != 0) {
        gm_msgf(err, errcap, "%s: %s", path, why);
        close(fd);
        seg_reset(s);
        return -1;
    }
    s->len = len;
    s->fd = fd;
    s->uid = st.st_uid;
    s->st_dev = st.st_dev;
    s->st_ino = st.st_ino;
    s->head_len = hn;
    s->name_ns = nid.pidns;
    return 0;
}

/* Map the whole segment (for the event ring), once; the mapping must show
 * the geometry validated at open. */
struct remap_args {
    const unsigned char *p;
    size_t n;
    struct gm_seg *s;
};

static int remap_cb(void *arg)
{
    struct remap_args *a = arg;
    struct gm_seg again = *a->s;
    if (validate(a->p, a->n, &again, NULL, 0) != 0)
        return -1;
    return again.dev_slots == a->s->dev_slots &&
                   again.ring_capacity == a->s->ring_capacity &&
                   again.total_size == a->s->total_size
               ? 0 : -1;
}

static int seg_map(const struct gm_seg *cs)
{
    struct gm_seg *s = (struct gm_seg *)cs; /* the mapping is a cache */
    if (s->base != NULL)
        return 0;
    if (s->fd < 0)
        return -1;
    void *m = mmap(NULL, s->len, PROT_READ, MAP_SHARED, s->fd, 0);
    if (m == MAP_FAILED)
        return -1;
    pthread_once(&bus_once, install_bus);
    struct remap_args a = { m, s->len, s };
    if (guarded(remap_cb, &a) != 0) {
        munmap(m, s->len);
        return -1;
    }
    s->base = m;
    s->mapped = true;
    return 0;
}

int gm_seg_open(struct gm_seg *s, const char *dir, const char *prefix,
                int pid, char *err, size_t errcap)
{
    char path[512];
    int n = snprintf(path, sizeof path, "%s/%s.%d",
                     dir ? dir : GM_READER_DEFAULT_DIR, prefix, pid);
    if (n < 0 || (size_t)n >= sizeof path) {
        seg_reset(s);
        gm_msgf(err, errcap, "segment path too long");
        return -1;
    }
    return gm_seg_open_path(s, path, err, errcap);
}

int gm_seg_open_id(struct gm_seg *s, const char *dir, const char *prefix,
                   const struct gm_seg_id *id, char *err, size_t errcap)
{
    if (id->pidns == 0)
        return gm_seg_open(s, dir, prefix, id->pid, err, errcap);
    char path[512];
    int n = snprintf(path, sizeof path, "%s/%s.%d.ns%llu",
                     dir ? dir : GM_READER_DEFAULT_DIR, prefix, id->pid,
                     (unsigned long long)id->pidns);
    if (n < 0 || (size_t)n >= sizeof path) {
        seg_reset(s);
        gm_msgf(err, errcap, "segment path too long");
        return -1;
    }
    return gm_seg_open_path(s, path, err, errcap);
}

static uint64_t ns_of_link(const char *path);
static int inner_pid(int pid);

int gm_seg_open_pid(struct gm_seg *s, const char *dir, const char *prefix,
                    int pid, char *err, size_t errcap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/pid", pid);
    uint64_t ns = ns_of_link(path);
    int inner = ns != 0 && ns != GM_PIDNS_INIT ? inner_pid(pid) : 0;
    if (inner > 0) {
        struct gm_seg_id id = { inner, ns };
        if (gm_seg_open_id(s, dir, prefix, &id, err, errcap) == 0)
            return 0;
    }
    return gm_seg_open(s, dir, prefix, pid, err, errcap);
}

void gm_seg_close(struct gm_seg *s)
{
    if (s->mapped)
        munmap((void *)s->base, s->len);
    if (s->fd >= 0)
        close(s->fd);
    seg_reset(s);
}

/* ---- listing ------------------------------------------------------------ */

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* "<digits>" without a leading zero, 1..INT_MAX; -1 otherwise. */
static int parse_pid(const char *q)
{
    if (*q < '1' || *q > '9')
        return -1;
    long v = 0;
    for (; *q; q++) {
        if (*q < '0' || *q > '9')
            return -1;
        v = v * 10 + (*q - '0');
        if (v > INT_MAX)
            return -1;
    }
    return (int)v;
}

static int cmp_id(const void *a, const void *b)
{
    const struct gm_seg_id *x = a, *y = b;
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    return (x->pidns > y->pidns) - (x->pidns < y->pidns);
}

/* ids[0..n) is a heap with the greatest id on top: id replaces the top
 * and sinks to its place. */
static void heap_sink(struct gm_seg_id *ids, size_t n, struct gm_seg_id id)
{
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && cmp_id(&ids[c + 1], &ids[c]) > 0)
            c++;
        if (cmp_id(&ids[c], &id) <= 0)
            break;
        ids[i] = ids[c];
        i = c;
    }
    ids[i] = id;
}

/* ids[0..n) a heap, greatest on top: id added at n rises to its place. */
static void heap_rise(struct gm_seg_id *ids, size_t n, struct gm_seg_id id)
{
    size_t i = n;
    while (i > 0 && cmp_id(&ids[(i - 1) / 2], &id) < 0) {
        ids[i] = ids[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    ids[i] = id;
}

int gm_reader_list_ids(const char *dir, const char *prefix,
                       struct gm_seg_id *ids, size_t max)
{
    DIR *d = opendir(dir ? dir : GM_READER_DEFAULT_DIR);
    if (d == NULL)
        return -1;
    size_t plen = strlen(prefix), count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        struct gm_seg_id id;
        if (strncmp(name, prefix, plen) != 0 || name[plen] != '.' ||
            !parse_id(name + plen + 1, &id)) /* "group@x" fails here */
            continue;
        /* The lowest max ids, whatever order the directory lists. */
        if (count < max)
            heap_rise(ids, count, id);
        else if (max > 0 && cmp_id(&id, &ids[0]) < 0)
            heap_sink(ids, max, id);
        if (count < INT_MAX)
            count++;
    }
    closedir(d);
    if (count > 0 && max > 0)
        qsort(ids, count < max ? count : max, sizeof *ids, cmp_id);
    return (int)count;
}

int gm_reader_list(const char *dir, const char *prefix, int *pids,
                   size_t max)
{
    DIR *d = opendir(dir ? dir : GM_READER_DEFAULT_DIR);
    if (d == NULL)
        return -1;
    size_t plen = strlen(prefix), count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (strncmp(name, prefix, plen) != 0 || name[plen] != '.')
            continue;
        int pid = parse_pid(name + plen + 1); /* "group@x" fails here */
        if (pid < 0)
            continue;
        if (count < max)
            pids[count] = pid;
        if (count < INT_MAX)
            count++;
    }
    closedir(d);
    if (count > 0 && max > 0)
        qsort(pids, count < max ? count : max, sizeof *pids, cmp_int);
    return (int)count;
}

/* ---- snapshots and liveness -------------------------------------------- */

struct snap_args {
    const struct gm_seg *s;
    struct gm_snapshot *out;
};

static int snap_cb(void *arg)
{
    struct snap_args *a = arg;
    const struct gm_abi_header *h = (const struct gm_abi_header *)a->s->base;
    int bad = gm_tel_read(h, a->s->dev_slots, a->s->ring_capacity, a->out);
    gm_tel_read_oom(h, a->s->dev_slots, a->s->ring_capacity, a->out);
    return bad;
}

static void snap_backoff(unsigned attempt)
{
    if (attempt < 4)
        sched_yield();
    else
        nanosleep(&(struct timespec){ 0, 20000 }, NULL);
}

#define SNAP_ATTEMPTS 64u
#define SNAP_STUCK 16u
#define SNAP_FIRST_DEVS 2u

/* The OOM snapshots through pread: the state first, then, when complete,
 * the whole block (its fields never change after the state says so). */
static void read_oom_file(const struct gm_seg *s, struct gm_snapshot *out)
{
    memset(out->oom, 0, sizeof out->oom);
    for (uint32_t i = 0; i < out->dev_count && i < s->hist_slots; i++) {
        off_t at = (off_t)(s->hist_offset +
                           (uint64_t)GM_ABI_MARKS * sizeof(struct gm_abi_mark) +
                           (uint64_t)i * sizeof(struct gm_abi_hist));
        uint64_t state = 0;
        if (!gm_pread_all(s->fd, &state, sizeof state, at) ||
            state != GM_ABI_OOM_DONE ||
            !gm_pread_all(s->fd, &out->oom[i], sizeof out->oom[i], at) ||
            out->oom[i].state != GM_ABI_OOM_DONE) {
            memset(&out->oom[i], 0, sizeof out->oom[i]);
            continue;
        }
        if (out->oom[i].nclasses > GM_ABI_OOM_CLASSES)
            out->oom[i].nclasses = GM_ABI_OOM_CLASSES;
    }
}

/* A snapshot through pread: the seqlock protocol of shim/telemetry/abi.h with whole
 * copies for loads, which system calls keep in order: wdone from copy A,
 * the fields from copy B, wbegin from copy C; a device is consistent when
 * C's wbegin equals A's wdone. Copy C of one round is copy A of the next. */
static int snapshot_file(const struct gm_seg *s, struct gm_snapshot *out)
{
    const size_t hs = sizeof(struct gm_abi_header);
    const size_t ds = sizeof(struct gm_abi_dev);
    uint32_t slots = s->dev_slots;
    /* Copy A: the header (for dev_seen and the header's counters) and
     * the first device blocks; the rest when more devices were seen. */
    _Alignas(64) unsigned char small[3][sizeof s->head];
    unsigned char *a = small[0], *b = small[1], *c = small[2];
    int rc = -1;
    uint32_t first = slots < 2 ? slots : 2;
    if (!gm_pread_all(s->fd, a, hs + first * ds, 0))
        return -1;
    uint64_t seen = ((const struct gm_abi_header *)a)->dev_seen;
    uint32_t n = seen < slots ? (uint32_t)seen : slots;
    size_t devs = (size_t)n * ds, need = hs + devs;
    if (need > sizeof s->head) {
        a = aligned_alloc(64, need);
        b = aligned_alloc(64, need);
        c = aligned_alloc(64, need);
        if (a == NULL || b == NULL || c == NULL)
            goto out;
        memcpy(a, small[0], hs + first * ds);
        if (!gm_pread_all(s->fd, a + hs + first * ds, (n - first) * ds,
                       hs + first * ds))
            goto out;
    }
    uint64_t pending = n >= 64 ? ~0ull : (1ull << n) - 1; /* unsettled */
    uint64_t stuck = 0, last[GM_ABI_MAX_DEVICES];
    unsigned same[GM_ABI_MAX_DEVICES];
    memset(same, 0, sizeof same);
    memset(last, 0, sizeof last);
    memcpy(b, a, hs); /* header fields: as of copy A */
    struct gm_abi_dev *da = (struct gm_abi_dev *)(a + hs);
    struct gm_abi_dev *db = (struct gm_abi_dev *)(b + hs);
    const struct gm_abi_dev *dc = (const struct gm_abi_dev *)(c + hs);
    for (unsigned att = 0; att < SNAP_ATTEMPTS && pending != 0; att++) {
        if (att > 0)
            snap_backoff(att);
        if (!gm_pread_all(s->fd, c + hs, devs, hs)) /* copy B */
            goto out;
        for (uint32_t i = 0; i < n; i++)
            if (pending >> i & 1)
                db[i] = dc[i];
        if (!gm_pread_all(s->fd, c + hs, devs, hs)) /* copy C */
            goto out;
        for (uint32_t i = 0; i < n; i++) {
            if (!(pending >> i & 1))
                continue;
            if (da[i].wbegin == da[i].wdone && dc[i].wbegin == da[i].wdone) {
                pending &= ~(1ull << i);
                continue;
            }
            /* A writer inside; one that stays there is dead. */
            bool inside = dc[i].wbegin != dc[i].wdone;
            same[i] = inside && dc[i].wbegin == last[i] ? same[i] + 1 : 0;
            last[i] = dc[i].wbegin;
            if (same[i] >= SNAP_STUCK) {
                pending &= ~(1ull << i);
                stuck |= 1ull << i;
            }
        }
        memcpy(da, dc, devs); /* C is the next round's A */
    }
    /* b: header of copy A and each device's consistent copy (or its last
     * one). The counters are settled here, so gm_tel_read only copies and
     * checks the writer's invariants; the states come from the rounds. */
    for (uint32_t i = 0; i < n; i++)
        db[i].wbegin = db[i].wdone;
    gm_tel_read((const struct gm_abi_header *)b, slots, s->ring_capacity,
                out);
    out->dev_count = n;
    read_oom_file(s, out);
    rc = 0;
    for (uint32_t i = 0; i < n; i++) {
        if ((pending | stuck) >> i & 1)
            out->dev_state[i] = GM_SNAP_BUSY;
        rc += out->dev_state[i] != GM_SNAP_OK;
    }
out:
    if (a != small[0]) {
        free(a);
        free(b);
        free(c);
    }
    return rc;
}

int gm_seg_snapshot(const struct gm_seg *s, struct gm_snapshot *out)
{
    if (s->base == NULL)
        return s->fd >= 0 ? snapshot_file(s, out) : -1;
    struct snap_args a = { s, out };
    int r = guarded(snap_cb, &a);
    return r == GUARD_FAULT ? -1 : r;
}

static int flags_cb(void *arg)
{
    const struct gm_seg *s = arg;
    const struct gm_abi_header *h = (const struct gm_abi_header *)s->base;
    return (int)(LD_ACQ(&h->flags) & 0x7fffffffu);
}

/* ---- pid namespaces ------------------------------------------------------ */

static uint64_t ns_of_link(const char *path)
{
    char link[64];
    ssize_t k = readlink(path, link, sizeof link - 1);
    if (k <= 0)
        return 0;
    link[k] = '\0';
    return gm_ident_parse_nslink(link);
}

static uint64_t self_ns;
static pthread_once_t self_ns_once = PTHREAD_ONCE_INIT;

static void read_self_ns(void)
{
    self_ns = ns_of_link("/proc/self/ns/pid");
}

uint64_t gm_reader_self_pidns(void)
{
    pthread_once(&self_ns_once, read_self_ns);
    return self_ns;
}

bool gm_seg_local(const struct gm_seg *s)
{
    uint64_t me = gm_reader_self_pidns();
    if (s->name_ns == 0)
        return me == 0 || me == GM_PIDNS_INIT;
    return s->name_ns == me;
}

size_t gm_locks_parse(struct gm_locks *lm, const char *text, size_t n)
{
    size_t kept = 0, i = 0;
    while (i < n) {
        size_t b = i;
        while (i < n && text[i] != '\n')
            i++;
        char line[256];
        size_t len = i - b < sizeof line - 1 ? i - b : sizeof line - 1;
        memcpy(line, text + b, len);
        line[len] = '\0';
        i++;
        /* "N: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INO START END"; a waiter
         * has "->" after the number and holds nothing. */
        char kind[16], adv[16], rw[16];
        int pid;
        unsigned maj, min;
        unsigned long long ino;
        const char *p = strchr(line, ':');
        if (p == NULL || strstr(line, "->") != NULL)
            continue;
        if (sscanf(p + 1, "%15s %15s %15s %d %x:%x:%llu", kind, adv, rw, &pid,
                   &maj, &min, &ino) != 7 ||
            strcmp(kind, "FLOCK") != 0 || strcmp(rw, "WRITE") != 0 ||
            pid <= 0)
            continue;
        if (lm->n >= GM_LOCKS_MAX)
            break;
        if (lm->n == lm->cap) {
            size_t cap = lm->cap ? lm->cap * 2 : 64;
            struct gm_lock_ent *ne = realloc(lm->e, cap * sizeof *ne);
            if (ne == NULL)
                break;
            lm->e = ne;
            lm->cap = cap;
        }
        lm->e[lm->n++] = (struct gm_lock_ent){ maj, min, ino, pid };
        kept++;
    }
    return kept;
}

int gm_locks_load(struct gm_locks *lm, const char *path)
{
    lm->e = NULL;
    lm->n = lm->cap = 0;
    int fd = open(path ? path : "/proc/locks", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    const size_t limit = 8u << 20;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        if (n == cap) {
            if (cap >= limit)
                break;
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (buf == NULL)
        return -1;
    gm_locks_parse(lm, buf, n);
    free(buf);
    return 0;
}

void gm_locks_free(struct gm_locks *lm)
{
    free(lm->e);
    lm->e = NULL;
    lm->n = lm->cap = 0;
}

int gm_locks_holder(const struct gm_locks *lm, dev_t dev, ino_t ino)
{
    for (size_t i = 0; i < lm->n; i++)
        if (lm->e[i].ino == (unsigned long long)ino &&
            lm->e[i].maj == major(dev) && lm->e[i].min == minor(dev))
            return lm->e[i].pid;
    return 0;
}

/* The last NSpid of /proc/<pid>/status: the pid in its own namespace. */
static int inner_pid(int pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strstr(buf, "\nNSpid:");
    if (p == NULL)
        return 0;
    p += 8;
    long last = 0;
    while (*p != '\n' && *p != '\0') {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        last = v;
        p = end;
    }
    return last > 0 && last <= INT_MAX ? (int)last : 0;
}

int gm_seg_host_pid(const struct gm_seg *s, const struct gm_locks *lm)
{
    if (gm_seg_local(s))
        return (int)s->pid;
    if (s->fd < 0)
        return 0;
    struct gm_locks own = { NULL, 0, 0 };
    if (lm == NULL) {
        if (gm_locks_load(&own, NULL) != 0)
            return 0;
        lm = &own;
    }
    int pid = gm_locks_holder(lm, s->st_dev, s->st_ino);
    gm_locks_free(&own);
    if (pid <= 0)
        return 0;
    /* The holder must be the writer: in the namespace the name says (the
     * initial one for a plain name), with the header's pid there. */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/pid", pid);
    uint64_t ns = ns_of_link(path);
    uint64_t want = s->name_ns ? s->name_ns : GM_PIDNS_INIT;
    if (ns != want || inner_pid(pid) != (int)s->pid)
        return 0;
    return pid;
}

enum gm_seg_state gm_seg_state(const struct gm_seg *s)
{
    /* Another pid namespace's pid names some other process here. */
    if (gm_seg_local(s) && gm_proc_alive((int)s->pid, s->start_ticks))
        return GM_SEG_ALIVE;
    if (s->fd >= 0) {
        /* The writer holds LOCK_EX for the segment's life. */
        if (flock(s->fd, LOCK_SH | LOCK_NB) != 0) {
            if (errno == EWOULDBLOCK)
                return GM_SEG_ALIVE;
        } else {
            flock(s->fd, LOCK_UN);
        }
    }
    int f;
    if (s->base == NULL) {
        uint32_t v = 0;
        f = s->fd >= 0 &&
                    gm_pread_all(s->fd, &v, sizeof v,
                              offsetof(struct gm_abi_header, flags))
                ? (int)(v & 0x7fffffffu) : GUARD_FAULT;
    } else {
        f = guarded(flags_cb, (void *)s);
    }
    return f != GUARD_FAULT && (f & GM_ABI_F_CLOSED) ? GM_SEG_EXITED
                                                     : GM_SEG_DEAD;
}

const char *gm_seg_state_name(enum gm_seg_state st)
{
    switch (st) {
    case GM_SEG_ALIVE: return "alive";
    case GM_SEG_EXITED: return "exited";
    case GM_SEG_DEAD: return "dead";
    }
    return "?";
}

struct ident_args {
    const struct gm_abi_header *h;
    struct gm_abi_ident *out;
};

static int ident_cb(void *arg)
{
    struct ident_args *a = arg;
    gm_ident_copy(a->out, &a->h->ident);
    return 0;
}

int gm_seg_ident(const struct gm_seg *s, struct gm_abi_ident *out)
{
    memset(out, 0, sizeof *out);
    if (s->head_len >= sizeof(struct gm_abi_header)) {
        gm_ident_copy(out, &((const struct gm_abi_header *)s->head)->ident);
        return 0;
    }
    if (s->base == NULL)
        return -1;
    struct ident_args a = { (const struct gm_abi_header *)s->base, out };
    return guarded(ident_cb, &a) == 0 ? 0 : -1;
}

int gm_seg_summary_with(const struct gm_seg *s, const struct gm_locks *lm,
                        struct gm_proc *out)
{
    out->pid = (int)s->pid;
    out->uid = s->uid;
    out->pidns = s->name_ns;
    out->local = gm_seg_local(s);
    out->busy = gm_seg_snapshot(s, &out->snap);
    out->state = gm_seg_state(s);
    out->host_pid = out->local ? (int)s->pid
                    : out->state == GM_SEG_ALIVE ? gm_seg_host_pid(s, lm) : 0;
    return out->busy;
}

int gm_seg_summary(const struct gm_seg *s, struct gm_proc *out)
{
    return gm_seg_summary_with(s, NULL, out);
}

/* ---- events ------------------------------------------------------------- */

struct head_args {
    const struct gm_seg *s;
    uint64_t head;
};

static int head_cb(void *arg)
{
    struct head_args *a = arg;
    const struct gm_abi_header *h = (const struct gm_abi_header *)a->s->base;
    a->head = LD_ACQ(&h->ring_head);
    return 0;
}

void gm_cursor_init(struct gm_cursor *c, const struct gm_seg *s,
                    bool only_new)
{
    memset(c, 0, sizeof *c);
    if (only_new && seg_map(s) == 0) {
        struct head_args a = { s, 0 };
        if (guarded(head_cb, &a) == 0)
            c->next = a.head;
    }
}

struct drain_args {
    const struct gm_seg *s;
    struct gm_cursor *c;
    struct gm_abi_record *out;
    size_t max;
    unsigned flags;
    size_t n;
    uint64_t lost;
};

/* Works on a copy of the cursor, so a fault leaves the caller's intact. */
static int drain_cb(void *arg)
{
    struct drain_args *a = arg;
    const struct gm_seg *s = a->s;
    struct gm_cursor *c = a->c;
    const struct gm_abi_header *h = (const struct gm_abi_header *)s->base;
    const struct gm_abi_record *ring =
        (const struct gm_abi_record *)(s->base + s->ring_offset);
    uint64_t cap = s->ring_capacity, mask = cap - 1;
    uint64_t head = LD_ACQ(&h->ring_head); /* read once: bounds this call */
    if (c->next > head)
        c->next = head; /* a head that went back: nothing to read */
    if (head - c->next > cap) {
        a->lost += head - c->next - cap; /* overwritten before we came */
        c->next = head - cap;
    }
    for (uint64_t step = 0; step < cap && c->next < head && a->n < a->max;
         step++) {
        struct gm_abi_record r;
        int st = gm_tel_read_record(&ring[c->next & mask], c->next, &r);
        if (st == GM_REC_OK) {
            a->out[a->n++] = r;
        } else if (st == GM_REC_GONE) {
            a->lost++;
        } else if (a->flags & GM_DRAIN_FLUSH) {
            a->lost++;
        } else {
            uint64_t now = gm_clock_monotonic_ns();
            if (c->stall_since_ns == 0 || c->stall_idx != c->next) {
                c->stall_idx = c->next;
                c->stall_since_ns = now ? now : 1;
                break;
            }
            if (now - c->stall_since_ns < GM_READER_STALL_NS)
                break;
            a->lost++; /* claimed long ago, never published: dropped */
        }
        c->next++;
        c->stall_since_ns = 0;
    }
    return 0;
}

size_t gm_seg_drain(const struct gm_seg *s, struct gm_cursor *c,
                    struct gm_abi_record *out, size_t max, unsigned flags,
                    uint64_t *lost)
{
    if (seg_map(s) != 0) {
        if (lost != NULL)
            *lost = 0;
        return 0;
    }
    struct gm_cursor work = *c;
    struct drain_args a = { s, &work, out, max, flags, 0, 0 };
    int r = guarded(drain_cb, &a);
    if (lost != NULL)
        *lost = r == GUARD_FAULT ? 0 : a.lost;
    if (r == GUARD_FAULT)
        return 0;
    *c = work;
    return a.n;
}



/* ---- hostile input ------------------------------------------------------ */

int gm_reader_check_bytes(const void *p, size_t n)
{
    if (n > MAX_SEGMENT)
        n = MAX_SEGMENT;
    size_t alloc = (n + 63) / 64 * 64;
    unsigned char *img = aligned_alloc(64, alloc ? alloc : 64);
    struct gm_snapshot *snap = malloc(sizeof *snap);
    char *text = malloc(65536);
    int rc = -1;
    if (img == NULL || snap == NULL || text == NULL)
        goto out;
    if (n)
        memcpy(img, p, n);
    struct gm_seg s;
    char err[192];
    if (gm_seg_open_mem(&s, img, n, err, sizeof err) != 0)
        goto out;
    rc = 0;
    struct gm_abi_ident id;
    char job[GM_ID_NS_LEN + GM_ID_POD_LEN + 2];
    if (gm_seg_ident(&s, &id) == 0)
        (void)gm_ident_job(&id, job, sizeof job);
    if (gm_seg_snapshot(&s, snap) >= 0) {
        gm_report_text(snap, 0, text, 65536);
        gm_report_json(snap, GM_REPORT_LIVE, text, 65536);
    }
    struct gm_cursor c;
    gm_cursor_init(&c, &s, false);
    struct gm_abi_record recs[64];
    for (uint64_t i = 0; i <= s.ring_capacity / 64 + 2; i++) {
        uint64_t lost = 0;
        size_t got = gm_seg_drain(&s, &c, recs, 64, GM_DRAIN_FLUSH, &lost);
        for (size_t k = 0; k < got; k++) {
            (void)gm_ev_kind_name(recs[k].kind);
            (void)gm_api_name(recs[k].api);
        }
        if (got == 0 && lost == 0)
            break;
    }
    /* The history region: series, marks, OOM snapshots and their line. */
    struct gm_hist_point *pts = malloc(GM_HIST_POINTS_MAX * sizeof *pts);
    struct gm_mark_info *marks = malloc(GM_ABI_MARKS * sizeof *marks);
    if (pts != NULL) {
        for (unsigned d = 0; d < s.hist_slots && d < 4; d++) {
            (void)gm_seg_history(&s, d, pts, GM_HIST_POINTS_MAX, err,
                                 sizeof err);
            struct gm_abi_oom o;
            if (gm_seg_oom(&s, d, &o, err, sizeof err) == 1)
                gm_report_oom_line(&o, 0, true, text, 65536);
        }
        free(pts);
    }
    if (marks != NULL)
        (void)gm_seg_marks(&s, marks, GM_ABI_MARKS, err, sizeof err);
    free(marks);
    (void)gm_seg_steps(&s);
    gm_seg_close(&s);
out:
    free(text);
    free(snap);
    free(img);
    return rc;
}

/* ---- history ------------------------------------------------------------ */

#define BUCKET_ATTEMPTS 8u
#define HIST_YIELDS 2u    /* per read of a history, all buckets together */

struct hist_args {
    const struct gm_seg *s;
    unsigned dev;
    struct gm_abi_bucket (*tiers)[GM_ABI_HIST_BUCKETS];
    uint64_t base_ns, steps;
    unsigned yields;              /* yields left (HIST_YIELDS at first) */
};

/* Copies every bucket of one device: a slot being written is retried a
 * few times, then left out (empty). A writer holds a bucket for a few
 * stores, so a retry or two suffices; the yields between retries are
 * bounded for the whole read, so a segment whose buckets all look busy
 * (hostile, or a writer killed inside a roll) costs no more than two. */
static int hist_cb(void *arg)
{
    struct hist_args *a = arg;
    const struct gm_abi_header *h = (const struct gm_abi_header *)a->s->base;
    const struct gm_abi_hist *hs =
        (const struct gm_abi_hist *)(a->s->base + a->s->hist_offset +
                                     (size_t)GM_ABI_MARKS *
                                         sizeof(struct gm_abi_mark)) +
        a->dev;
    a->base_ns = h->hist_base_ns;
    a->steps = LD_ACQ(&h->steps);
    for (unsigned t = 0; t < GM_ABI_HIST_TIERS; t++)
        for (unsigned i = 0; i < GM_ABI_HIST_BUCKETS; i++) {
            struct gm_abi_bucket *dst = &a->tiers[t][i];
            const struct gm_abi_bucket *src = &hs->tier[t][i];
            bool ok = false;
            for (unsigned k = 0; k < BUCKET_ATTEMPTS && !ok; k++) {
                ok = gm_hist_read_bucket(src, dst);
                if (!ok && LD_ACQ(&src->seq) == 0)
                    break; /* never written */
                if (!ok && a->yields > 0) {
                    a->yields--;
                    sched_yield();
                }
            }
            if (!ok || (dst->seq - 1) % GM_ABI_HIST_BUCKETS != i)
                memset(dst, 0, sizeof *dst); /* busy, torn or misplaced */
        }
    return 0;
}

int gm_seg_history(const struct gm_seg *s, unsigned dev,
                   struct gm_hist_point *out, size_t max, char *err,
                   size_t errcap)
{
    if (dev >= s->hist_slots || max == 0)
        return 0;
    if (seg_map(s) != 0) {
        gm_msgf(err, errcap, "cannot map the segment to read its history");
        return -1;
    }
    struct gm_snapshot *snap = malloc(sizeof *snap);
    struct hist_args a = { s, dev, malloc(sizeof(struct gm_abi_bucket) *
                                          GM_ABI_HIST_TIERS *
                                          GM_ABI_HIST_BUCKETS), 0, 0,
                          HIST_YIELDS };
    int rc = -1;
    if (snap == NULL || a.tiers == NULL) {
        gm_msgf(err, errcap, "out of memory");
        goto out;
    }
    /* The open bucket first: a bucket the copy below finds closed meanwhile
     * has an index below the open one's and is dropped from the end. */
    int bad = gm_seg_snapshot(s, snap);
    if (bad < 0 || guarded(hist_cb, &a) == GUARD_FAULT) {
        gm_msgf(err, errcap, "the segment faulted while reading its history");
        goto out;
    }
    struct gm_hist_point open, *op = NULL;
    if (dev < snap->dev_count && snap->dev_state[dev] == GM_SNAP_OK &&
        gm_hist_open_point(&snap->dev[dev], a.base_ns, a.steps, &open))
        op = &open;
    size_t n = gm_hist_stitch(a.tiers, NULL, a.base_ns, out, max);
    if (op != NULL) /* copied first: gm_hist_append_open drops the newer */
        n = gm_hist_append_open(out, n, max, op);
    rc = (int)n;
out:
    free(snap);
    free(a.tiers);
    return rc;
}

struct marks_args {
    const struct gm_seg *s;
    struct gm_mark_info *out;
    size_t max, n;
};

static int marks_cb(void *arg)
{
    struct marks_args *a = arg;
    const struct gm_abi_header *h = (const struct gm_abi_header *)a->s->base;
    const struct gm_abi_mark *m =
        (const struct gm_abi_mark *)(a->s->base + a->s->hist_offset);
    uint64_t head = LD_ACQ(&h->marks);
    uint64_t from = head > GM_ABI_MARKS ? head - GM_ABI_MARKS : 0;
    for (uint64_t k = from; k < head && a->n < a->max; k++) {
        struct gm_abi_mark c;
        if (!gm_tel_read_mark(&m[k % GM_ABI_MARKS], k, &c))
            continue; /* being written, or overwritten meanwhile */
        struct gm_mark_info *o = &a->out[a->n++];
        o->number = k;
        o->ts_ns = c.ts_ns;
        o->step = c.step;
        /* The writer stores sanitised labels; a hostile file may not. */
        gm_mark_label(c.label, o->label, sizeof o->label);
    }
    return 0;
}

int gm_seg_marks(const struct gm_seg *s, struct gm_mark_info *out,
                 size_t max, char *err, size_t errcap)
{
    if (seg_map(s) != 0) {
        gm_msgf(err, errcap, "cannot map the segment to read its marks");
        return -1;
    }
    struct marks_args a = { s, out, max, 0 };
    if (guarded(marks_cb, &a) == GUARD_FAULT) {
        gm_msgf(err, errcap, "the segment faulted while reading its marks");
        return -1;
    }
    return (int)a.n;
}

struct steps_args {
    const struct gm_seg *s;
    uint64_t v;
};

static int steps_cb(void *arg)
{
    struct steps_args *a = arg;
    a->v = LD_ACQ(&((const struct gm_abi_header *)a->s->base)->steps);
    return 0;
}

uint64_t gm_seg_steps(const struct gm_seg *s)
{
    if (s->base == NULL) {
        uint64_t v = 0;
        if (s->fd >= 0 &&
            gm_pread_all(s->fd, &v, sizeof v,
                      offsetof(struct gm_abi_header, steps)))
            return v;
        return 0;
    }
    struct steps_args a = { s, 0 };
    return guarded(steps_cb, &a) == GUARD_FAULT ? 0 : a.v;
}

struct oom_args {
    const struct gm_seg *s;
    unsigned dev;
    struct gm_abi_oom *out;
};

static int oom_cb(void *arg)
{
    struct oom_args *a = arg;
    const struct gm_abi_hist *hs =
        (const struct gm_abi_hist *)(a->s->base + a->s->hist_offset +
                                     (size_t)GM_ABI_MARKS *
                                         sizeof(struct gm_abi_mark)) +
        a->dev;
    /* Pairs with the writer's release store of DONE; the fields never
     * change after it. */
    if (LD_ACQ(&hs->oom.state) != GM_ABI_OOM_DONE)
        return 0;
    memcpy(a->out, &hs->oom, sizeof *a->out);
    if (a->out->nclasses > GM_ABI_OOM_CLASSES)
        a->out->nclasses = GM_ABI_OOM_CLASSES; /* a hostile file */
    return 1;
}

int gm_seg_oom(const struct gm_seg *s, unsigned dev, struct gm_abi_oom *out,
               char *err, size_t errcap)
{
    if (dev >= s->hist_slots)
        return 0;
    if (seg_map(s) != 0) {
        gm_msgf(err, errcap, "cannot map the segment to read its OOM "
                "snapshot");
        return -1;
    }
    struct oom_args a = { s, dev, out };
    int r = guarded(oom_cb, &a);
    if (r == GUARD_FAULT) {
        gm_msgf(err, errcap, "the segment faulted while reading its OOM "
                "snapshot");
        return -1;
    }
    return r;
}
