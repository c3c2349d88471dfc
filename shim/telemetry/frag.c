/*
 * shim/telemetry/frag.c — incremental external-fragmentation tracker (see frag.h for
 * the definition of the figure).
 *
 * Structure: a treap of live intervals keyed by start address (binary
 * search tree order on start, max-heap order on a random priority drawn at
 * insertion), with parent links. Each node stores the gap it owns (free
 * bytes between its in-order predecessor's end and its start, clamped at
 * 0) and the largest gap in its subtree, so the largest free gap is
 * root->maxgap; the tracker keeps the sum of all gaps. Invariants, checked
 * by gm_frag_check:
 *   - in-order starts strictly increase; parent prio >= child prio;
 *   - child->parent points back; root->parent == NULL;
 *   - node->gap == clamp(node->start - pred->end), 0 for the leftmost;
 *   - node->maxgap == max(node->gap, maxgap(l), maxgap(r));
 *   - total_gap == sum of gaps, count == number of nodes.
 *
 * An insert or remove changes at most two gaps: the new or removed node's,
 * and its successor's. Insert descends to where the new node's priority
 * puts it, splits the subtree there by key under the new node, recomputes
 * the maxima of the split chains bottom-up, then walks up the ancestors.
 * Remove joins the node's two subtrees in its place. The upward walk stops
 * as soon as a subtree's maximum came out unchanged and the successor (when
 * it is an ancestor) has been passed: nothing above can change then. The
 * split and join chains have expected constant length, the depth is
 * expected O(log n), so both operations take expected O(log n) and usually
 * touch only a few nodes besides the search path. No heights or colours:
 * nothing else has to be walked.
 */
#include "shim/telemetry/frag.h"

#include <errno.h>
#include <string.h>

struct gm_frag_node {
    uint64_t start;
    uint64_t end;                 /* start + size, no overflow (checked) */
    uint64_t gap;
    uint64_t maxgap;
    struct gm_frag_node *c[2];
    struct gm_frag_node *parent;
    struct gm_frag_node *prev, *next;   /* in-order neighbours */
    uint32_t prio;
    uint32_t holders;             /* adds of this start not yet removed
                                     (gm_frag_insert_over): >= 1 */
};

static inline struct gm_frag_node *node_get(struct gm_frag *f)
{
    return gm_nodepool_get(&f->nodes, sizeof(struct gm_frag_node));
}

static inline void node_put(struct gm_frag *f, struct gm_frag_node *n)
{
    gm_nodepool_put(&f->nodes, n);
}

/* ---- tree helpers ------------------------------------------------------ */

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
    n->maxgap = max_u64(n->gap, max_u64(mg(n->c[0]), mg(n->c[1])));
}

/* 64-bit linear congruential generator; its high half is the priority. */
static inline uint32_t next_prio(struct gm_frag *f)
{
    uint64_t x = f->rng * 6364136223846793005ull + 1442695040888963407ull;
    f->rng = x;
    return (uint32_t)(x >> 32);
}

/* Recompute maxima from t up to the root. `pending` is a node above t
 * whose own gap changed (or NULL): until it has been recomputed the walk
 * must go on; after that it stops at the first subtree whose maximum came
 * out unchanged. */
static inline void fix_up(struct gm_frag_node *t,
                          const struct gm_frag_node *pending)
{
    for (; t; t = t->parent) {
        uint64_t old = t->maxgap;
        pull(t);
        if (t == pending)
            pending = NULL;
        if (!pending && t->maxgap == old)
            return;
    }
}

/* Recompute maxima from t up to (not including) stop, unconditionally. */
static void pull_chain(struct gm_frag_node *t, const struct gm_frag_node *stop)
{
    for (; t != stop; t = t->parent)
        pull(t);
}

static inline struct gm_frag_node **link_of(struct gm_frag *f,
                                            struct gm_frag_node *n)
{
    struct gm_frag_node *p = n->parent;
    return p ? &p->c[p->c[1] == n] : &f->root;
}

/* ---- public API -------------------------------------------------------- */

int gm_frag_init(struct gm_frag *f)
{
    memset(f, 0, sizeof *f);
    f->rng = 0x2545f4914f6cdd1dull;
    return 0;
}

void gm_frag_destroy(struct gm_frag *f)
{
    gm_nodepool_destroy(&f->nodes);
    gm_frag_init(f);
}

int gm_frag_insert(struct gm_frag *f, uint64_t addr, uint64_t size)
{
    if (size == 0 || size > UINT64_MAX - addr)
        return -EINVAL;
    uint32_t prio = next_prio(f);
    struct gm_frag_node **link, *parent = NULL, *t, *u;

    /* Down to the insertion point: the first node of lower priority. An
     * equal start steers left, so a duplicate, if any, ends up as the
     * successor found below (one test instead of one per level). */
    int right = 0;
    for (t = f->root; t && t->prio >= prio; t = t->c[right]) {
        parent = t;
        right = addr > t->start;
    }
    link = parent ? &parent->c[right] : &f->root;
    /* On along the search path (the nodes the split will visit) to the
     * leaf level: the last node passed is the neighbour on one side, the
     * in-order list gives the other. */
    struct gm_frag_node *last = parent;
    for (u = t; u; u = u->c[right]) {
        last = u;
        right = addr > u->start;
    }
    struct gm_frag_node *pred = NULL, *succ = NULL;
    if (last) {
        pred = right ? last : last->prev;
        succ = right ? last->next : last;
    }
    if (succ && succ->start == addr)
        return -EEXIST;
    struct gm_frag_node *x = node_get(f);
    if (!x)
        return -ENOMEM;
    x->start = addr;
    x->end = addr + size;
    x->prio = prio;
    x->holders = 1;
    x->parent = parent;
    x->prev = pred;
    x->next = succ;
    x->gap = pred ? gap_between(pred->end, addr) : 0;
    f->total_gap += x->gap;
    if (pred)
        pred->next = x;
    if (succ) {
        uint64_t g = gap_between(x->end, succ->start);
        f->total_gap = f->total_gap - succ->gap + g;
        succ->gap = g;
        succ->prev = x;
    }

    /* Split t by addr into x's left (keys below) and right subtrees. */
    struct gm_frag_node **l = &x->c[0], **r = &x->c[1], *lp = x, *rp = x;
    while (t) {
        if (t->start < addr) {
            *l = t;
            t->parent = lp;
            lp = t;
            l = &t->c[1];
            t = t->c[1];
        } else {
            *r = t;
            t->parent = rp;
            rp = t;
            r = &t->c[0];
            t = t->c[0];
        }
    }
    *l = NULL;
    *r = NULL;
    *link = x;
    pull_chain(lp, x);
    pull_chain(rp, x);
    pull(x);
    /* The successor lies in the split subtree exactly when the right chain
     * is not empty (that subtree spans every key next to addr); otherwise
     * it is an ancestor, or absent. */
    fix_up(parent, rp == x ? succ : NULL);
    f->count++;
    f->largest = f->root->maxgap;
    return 0;
}

int gm_frag_remove(struct gm_frag *f, uint64_t addr)
{
    struct gm_frag_node *x = f->root;
    while (x && x->start != addr)
        x = x->c[addr > x->start];
    if (!x)
        return -ENOENT;
    if (x->holders > 1) { /* another add of this start is still live */
        x->holders--;
        return 0;
    }
    struct gm_frag_node *pred = x->prev, *succ = x->next;
    /* The successor is the leftmost node of x's right subtree when there is
     * one, an ancestor of x otherwise. */
    const struct gm_frag_node *pending = x->c[1] ? NULL : succ;
    f->total_gap -= x->gap;
    if (pred)
        pred->next = succ;
    if (succ) {
        uint64_t g = pred ? gap_between(pred->end, succ->start) : 0;
        f->total_gap = f->total_gap - succ->gap + g;
        succ->gap = g;
        succ->prev = pred;
        if (!pending)
            pull_chain(succ, x);   /* the left spine of x's right subtree */
    }

    /* Join x's subtrees in its place. */
    struct gm_frag_node **link = link_of(f, x), *top = x->parent, *p = top;
    struct gm_frag_node *a = x->c[0], *b = x->c[1];
    while (a && b) {
        if (a->prio > b->prio) {
            *link = a;
            a->parent = p;
            p = a;
            link = &a->c[1];
            a = a->c[1];
        } else {
            *link = b;
            b->parent = p;
            p = b;
            link = &b->c[0];
            b = b->c[0];
        }
    }
    struct gm_frag_node *rest = a ? a : b;
    *link = rest;
    if (rest)
        rest->parent = p;
    pull_chain(p, top);
    fix_up(top, pending);
    f->count--;
    f->largest = mg(f->root);
    node_put(f, x);
    return 0;
}

static struct gm_frag_node *find(const struct gm_frag *f, uint64_t addr)
{
    struct gm_frag_node *x = f->root;
    while (x && x->start != addr)
        x = x->c[addr > x->start];
    return x;
}

int gm_frag_insert_over(struct gm_frag *f, uint64_t addr, uint64_t size)
{
    int r = gm_frag_insert(f, addr, size);
    if (r != -EEXIST)
        return r;
    struct gm_frag_node *x = find(f, addr);
    uint32_t held = x->holders;
    if (x->end - x->start != size) {
        /* The later add's extent replaces the earlier one's. */
        x->holders = 1;
        (void)gm_frag_remove(f, addr);
        r = gm_frag_insert(f, addr, size);
        if (r != 0)
            return r; /* -ENOMEM cannot happen: a node was just put back */
        x = find(f, addr);
    }
    x->holders = held == UINT32_MAX ? held : held + 1;
    return 1;
}

uint64_t gm_frag_total_free(const struct gm_frag *f)
{
    return f->total_gap;
}

uint64_t gm_frag_largest_free(const struct gm_frag *f)
{
    return f->largest;
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

static void check_node(const struct gm_frag_node *n, struct walk *w)
{
    if (!n || w->bad)
        return;
    for (int d = 0; d < 2; d++) {
        const struct gm_frag_node *c = n->c[d];
        if (c && (c->parent != n || c->prio > n->prio))
            w->bad = 1;
    }
    check_node(n->c[0], w);
    if (w->prev && w->prev->start >= n->start)
        w->bad = 1;
    if (n->prev != w->prev || (w->prev && w->prev->next != n))
        w->bad = 1;
    uint64_t want = w->prev ? gap_between(w->prev->end, n->start) : 0;
    if (n->gap != want || n->end <= n->start || n->holders == 0)
        w->bad = 1;
    if (n->maxgap != max_u64(n->gap, max_u64(mg(n->c[0]), mg(n->c[1]))))
        w->bad = 1;
    w->prev = n;
    w->sum += n->gap;
    w->count++;
    check_node(n->c[1], w);
}

int gm_frag_check(const struct gm_frag *f)
{
    struct walk w = { NULL, 0, 0, 0 };
    if (f->root && f->root->parent)
        return -1;
    check_node(f->root, &w);
    if (w.prev && w.prev->next)
        return -1;
    if (w.bad || w.sum != f->total_gap || w.count != f->count ||
        f->largest != mg(f->root))
        return -1;
    return 0;
}
