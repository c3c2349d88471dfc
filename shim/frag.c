/*
 * shim/frag.c — incremental external-fragmentation tracker (see frag.h for
 * the definition of the figure).
 *
 * Structure: an AVL tree of live intervals keyed by start address. Each
 * node stores the gap it owns (free bytes between its in-order
 * predecessor's end and its start, clamped at 0) and the largest gap in its
 * subtree, so the largest free gap is root->maxgap. The tracker keeps the
 * sum of all gaps. Invariants, checked by gm_frag_check:
 *   - in-order starts strictly increase; |height(l) - height(r)| <= 1;
 *   - node->gap == clamp(node->start - pred->end), 0 for the leftmost;
 *   - node->maxgap == max(node->gap, maxgap(l), maxgap(r));
 *   - total_gap == sum of gaps, count == number of nodes.
 *
 * Insert and remove walk down once, remembering the path (an AVL tree of
 * n nodes is at most 1.44 log2(n + 2) high, so 64 entries are enough for
 * any n that fits in memory), change at most two gaps (the new or removed
 * node's, and its successor's, which always lies on that path), then walk
 * back up recomputing heights and maxima and rotating where needed. The
 * walk stops early once it is above the successor and a subtree's height
 * and maximum came out unchanged: nothing above can change then.
 */
#include "shim/frag.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_HEIGHT 64
#define SLAB_FIRST ((size_t)64 << 10)
#define SLAB_MAX ((size_t)8 << 20)

struct gm_frag_node {
    uint64_t start;
    uint64_t end;                 /* start + size, no overflow (checked) */
    uint64_t gap;
    uint64_t maxgap;
    struct gm_frag_node *c[2];    /* c[0] doubles as the spare-list link */
    int32_t height;
};

struct gm_frag_slab {
    struct gm_frag_slab *next;
    size_t bytes;
};

/* ---- node storage ------------------------------------------------------ */

static int slab_grow(struct gm_frag *f)
{
    size_t bytes = f->next_slab ? f->next_slab : SLAB_FIRST;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -ENOMEM;
    struct gm_frag_slab *s = p;
    s->next = f->slabs;
    s->bytes = bytes;
    f->slabs = s;
    /* Nodes start at the first 64-byte boundary after the header. */
    f->bump = (char *)p + 64;
    f->bump_end = (char *)p + bytes;
    f->next_slab = bytes < SLAB_MAX ? bytes * 2 : SLAB_MAX;
    return 0;
}

static struct gm_frag_node *node_get(struct gm_frag *f)
{
    struct gm_frag_node *n = f->spare;
    if (n) {
        f->spare = n->c[0];
        return n;
    }
    if ((size_t)(f->bump_end - f->bump) < sizeof *n && slab_grow(f) != 0)
        return NULL;
    n = (struct gm_frag_node *)(void *)f->bump;
    f->bump += sizeof *n;
    return n;
}

static void node_put(struct gm_frag *f, struct gm_frag_node *n)
{
    n->c[0] = f->spare;
    f->spare = n;
}

/* ---- tree helpers ------------------------------------------------------ */

static inline int32_t ht(const struct gm_frag_node *n)
{
    return n ? n->height : 0;
}

static inline uint64_t mg(const struct gm_frag_node *n)
{
    return n ? n->maxgap : 0;
}

static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* Free bytes between an end and the next start; 0 when they overlap. */
static inline uint64_t gap_between(uint64_t end, uint64_t start)
{
    return start > end ? start - end : 0;
}

static inline void pull(struct gm_frag_node *n)
{
    int32_t hl = ht(n->c[0]), hr = ht(n->c[1]);
    n->height = 1 + (hl > hr ? hl : hr);
    n->maxgap = max_u64(n->gap, max_u64(mg(n->c[0]), mg(n->c[1])));
}

/* Lift n->c[d] into n's place; returns the new subtree root. */
static struct gm_frag_node *rotate(struct gm_frag_node *n, int d)
{
    struct gm_frag_node *c = n->c[d];
    n->c[d] = c->c[!d];
    c->c[!d] = n;
    pull(n);
    pull(c);
    return c;
}

/* Recompute n from its (already correct) children and restore the AVL
 * balance; returns the subtree's root. */
static struct gm_frag_node *rebalance(struct gm_frag_node *n)
{
    int32_t hl = ht(n->c[0]), hr = ht(n->c[1]);
    int d;
    if (hl > hr + 1)
        d = 0;
    else if (hr > hl + 1)
        d = 1;
    else {
        pull(n);
        return n;
    }
    struct gm_frag_node *c = n->c[d];
    if (ht(c->c[!d]) > ht(c->c[d]))
        n->c[d] = rotate(c, !d);
    return rotate(n, d);
}

static inline void relink(struct gm_frag *f, struct gm_frag_node **path,
                          const int *dir, int i, struct gm_frag_node *n)
{
    if (i == 0)
        f->root = n;
    else
        path[i - 1]->c[dir[i - 1]] = n;
}

/* Walk path[top..0] upwards. Stop after index i once the subtree there kept
 * its height and maximum and i <= settle (nothing changed above it). */
static void fix_path(struct gm_frag *f, struct gm_frag_node **path,
                     const int *dir, int top, int settle)
{
    for (int i = top; i >= 0; i--) {
        struct gm_frag_node *n = path[i];
        int32_t oh = n->height;
        uint64_t om = n->maxgap;
        struct gm_frag_node *r = rebalance(n);
        if (r != n)
            relink(f, path, dir, i, r);
        if (i <= settle && r->height == oh && r->maxgap == om)
            return;
    }
}

static struct gm_frag_node *extreme(struct gm_frag_node *n, int d)
{
    while (n->c[d])
        n = n->c[d];
    return n;
}

/* ---- public API -------------------------------------------------------- */

int gm_frag_init(struct gm_frag *f)
{
    memset(f, 0, sizeof *f);
    return 0;
}

void gm_frag_destroy(struct gm_frag *f)
{
    struct gm_frag_slab *s = f->slabs;
    while (s) {
        struct gm_frag_slab *next = s->next;
        munmap(s, s->bytes);
        s = next;
    }
    memset(f, 0, sizeof *f);
}

int gm_frag_insert(struct gm_frag *f, uint64_t addr, uint64_t size)
{
    struct gm_frag_node *path[MAX_HEIGHT];
    int dir[MAX_HEIGHT];
    struct gm_frag_node *pred = NULL, *succ = NULL, *t = f->root;
    int n = 0, succ_i = 0;

    if (size == 0 || size > UINT64_MAX - addr)
        return -EINVAL;
    while (t) {
        if (addr == t->start)
            return -EEXIST;
        int d = addr > t->start;
        path[n] = t;
        dir[n] = d;
        if (d)
            pred = t;
        else {
            succ = t;
            succ_i = n;
        }
        n++;
        t = t->c[d];
    }
    struct gm_frag_node *x = node_get(f);
    if (!x)
        return -ENOMEM;
    x->start = addr;
    x->end = addr + size;
    x->c[0] = x->c[1] = NULL;
    x->height = 1;
    x->gap = pred ? gap_between(pred->end, addr) : 0;
    x->maxgap = x->gap;
    f->total_gap += x->gap;
    if (succ) {
        uint64_t g = gap_between(x->end, succ->start);
        f->total_gap = f->total_gap - succ->gap + g;
        succ->gap = g;
    } else {
        succ_i = n;   /* no other gap changed: may settle anywhere */
    }
    relink(f, path, dir, n, x);
    f->count++;
    fix_path(f, path, dir, n - 1, succ_i);
    return 0;
}

/* Unlink x (at path index xi, whose in-order successor lies in its right
 * subtree) by moving that successor into its place. Extends the path down
 * to the successor's old parent; returns the new top index. */
static int unlink_two(struct gm_frag *f, struct gm_frag_node **path,
                      int *dir, int xi)
{
    struct gm_frag_node *x = path[xi], *s = x->c[1];
    int n = xi;
    dir[n++] = 1;
    while (s->c[0]) {
        path[n] = s;
        dir[n++] = 0;
        s = s->c[0];
    }
    path[n - 1]->c[dir[n - 1]] = s->c[1];
    s->c[0] = x->c[0];
    s->c[1] = x->c[1];
    s->height = x->height;   /* old subtree figures, for the settle test */
    s->maxgap = x->maxgap;
    path[xi] = s;
    relink(f, path, dir, xi, s);
    return n - 1;
}

int gm_frag_remove(struct gm_frag *f, uint64_t addr)
{
    struct gm_frag_node *path[MAX_HEIGHT];
    int dir[MAX_HEIGHT];
    struct gm_frag_node *pred = NULL, *succ = NULL, *x = f->root;
    int n = 0, succ_i = 0;

    while (x && x->start != addr) {
        int d = addr > x->start;
        path[n] = x;
        dir[n] = d;
        if (d)
            pred = x;
        else {
            succ = x;
            succ_i = n;
        }
        n++;
        x = x->c[d];
    }
    if (!x)
        return -ENOENT;
    int xi = n;
    if (x->c[0])
        pred = extreme(x->c[0], 1);
    if (x->c[1]) {
        succ = extreme(x->c[1], 0);
        succ_i = xi;   /* it ends up at x's position */
    }
    f->total_gap -= x->gap;
    if (succ) {
        uint64_t g = pred ? gap_between(pred->end, succ->start) : 0;
        f->total_gap = f->total_gap - succ->gap + g;
        succ->gap = g;
    } else {
        succ_i = xi;
    }

    int top;
    if (x->c[0] && x->c[1]) {
        path[xi] = x;
        top = unlink_two(f, path, dir, xi);
    } else {
        struct gm_frag_node *c = x->c[0] ? x->c[0] : x->c[1];
        if (c)
            pull(c);   /* c may be the successor, whose gap changed */
        relink(f, path, dir, xi, c);
        top = xi - 1;
    }
    fix_path(f, path, dir, top, succ_i);
    f->count--;
    node_put(f, x);
    return 0;
}

uint32_t gm_frag_ppm(const struct gm_frag *f)
{
    uint64_t total = f->total_gap;
    if (total == 0)
        return 0;
    uint64_t rest = total - mg(f->root);
    return (uint32_t)((unsigned __int128)rest * 1000000u / total);
}

uint64_t gm_frag_total_free(const struct gm_frag *f)
{
    return f->total_gap;
}

uint64_t gm_frag_largest_free(const struct gm_frag *f)
{
    return mg(f->root);
}

uint64_t gm_frag_count(const struct gm_frag *f)
{
    return f->count;
}

/* ---- validation -------------------------------------------------------- */

struct walk {
    const struct gm_frag_node *prev;
    uint64_t sum;
    uint64_t count;
    int bad;
};

static int32_t check_node(const struct gm_frag_node *n, struct walk *w)
{
    if (!n || w->bad)
        return 0;
    int32_t hl = check_node(n->c[0], w);
    if (w->prev && w->prev->start >= n->start)
        w->bad = 1;
    uint64_t want = w->prev ? gap_between(w->prev->end, n->start) : 0;
    if (n->gap != want || n->end <= n->start)
        w->bad = 1;
    w->prev = n;
    w->sum += n->gap;
    w->count++;
    int32_t hr = check_node(n->c[1], w);
    int32_t h = 1 + (hl > hr ? hl : hr);
    if (hl > hr + 1 || hr > hl + 1 || n->height != h)
        w->bad = 1;
    if (n->maxgap != max_u64(n->gap, max_u64(mg(n->c[0]), mg(n->c[1]))))
        w->bad = 1;
    return h;
}

int gm_frag_check(const struct gm_frag *f)
{
    struct walk w = { NULL, 0, 0, 0 };
    check_node(f->root, &w);
    if (w.bad || w.sum != f->total_gap || w.count != f->count)
        return -1;
    return 0;
}
