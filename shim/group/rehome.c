/*
 * shim/group/rehome.c — a member whose group file is no longer the one at
 * the group's path (removed by rm or systemd-logind's RemoveIPC, or
 * replaced) moves to the file there now, creating it when there is none,
 * so that the members that came after the removal and those from before
 * share one limit again instead of each side admitting as if alone.
 *
 * Invariants: the move is made by the reaper only, with the gate closed
 * and no call inside (group_int.h), so no call of this process sees a
 * half-moved struct; the
 * member's charges are added to the new file before they leave the old
 * one (in between they count twice: refusals, never admissions past the
 * limit); the caller's device indices do not change (devmap); the old
 * segment stays mapped for good (a waiter of this process may sleep on
 * its word), its descriptor closed and its slot freed.
 */
#include "shim/group/group_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/parse.h"
#include "shim/base/clock.h"
#include "shim/base/msg.h"

#define MOVE_GATE_WAIT_NS 100000000ull /* calls in flight: the next pass */

/* The mover's side of the gate (group_int.h, use_begin): new calls wait,
 * and the calls inside are waited for within wait_ns; whether they all
 * left (else the gate is open again). */
static bool gate_close(struct gm_group *g, uint64_t wait_ns)
{
    __atomic_store_n(&g->moving, 1u, __ATOMIC_SEQ_CST);
    uint64_t end = gm_clock_monotonic_ns() + wait_ns;
    for (unsigned tries = 0;; tries++) {
        /* seq_cst (so acquire): see use_begin and use_end. */
        if (__atomic_load_n(&g->in_calls, __ATOMIC_SEQ_CST) == 0)
            return true;
        if (gm_clock_monotonic_ns() >= end)
            break;
        gm_grpi_gate_pause(tries);
    }
    __atomic_store_n(&g->moving, 0u, __ATOMIC_RELEASE);
    return false;
}

static void gate_open(struct gm_group *g)
{
    /* Release: the move's stores before the calls that pass the gate. */
    __atomic_store_n(&g->moving, 0u, __ATOMIC_RELEASE);
}

/* Whether g's file is no longer the one at g->path: two system calls.
 * Never on a test that could not be made (the descriptor is not the
 * file's any more: gm_grpi_fd_ours's test, on the same stat). */
static bool file_moved(const struct gm_group *g)
{
    struct stat a, b;
    if (g->fd < 0 || g->file_ino == 0 || fstat(g->fd, &a) != 0 ||
        (uint64_t)a.st_dev != g->file_dev || (uint64_t)a.st_ino != g->file_ino)
        return false;
    if (lstat(g->path, &b) != 0)
        return errno == ENOENT;
    return a.st_nlink == 0 || b.st_dev != a.st_dev || b.st_ino != a.st_ino;
}

/* g's identity (who it is, in which group, with which policy) into
 * `out`, cleared otherwise: never the gate, which other threads use. */
static void identity_of(const struct gm_group *g, struct gm_group *out)
{
    memset(out, 0, sizeof *out);
    out->fd = -1;
    out->slot = -1;
    out->pid = g->pid;
    out->start_ticks = g->start_ticks;
    out->weight = g->weight;
    out->keep = g->keep;
    out->limit = g->limit;
    out->on_reclaim = g->on_reclaim;
    out->arg = g->arg;
    memcpy(out->name, g->name, sizeof out->name);
    memcpy(out->path, g->path, sizeof out->path);
    memset(out->devmap, 0xff, sizeof out->devmap); /* -1: none yet */
}

/* A new member of the group at g's path, with g's identity. */
static int join_again(const struct gm_group *g, struct gm_group *ng,
                      char *err, size_t cap)
{
    identity_of(g, ng);
    return gm_grpi_join_path(ng, err, cap);
}

/* What leaving g's file needs of g: its identity and its binding to the
 * file (segment, descriptor, slot, device map). */
static void binding_of(const struct gm_group *g, struct gm_group *out)
{
    identity_of(g, out);
    out->seg = g->seg;
    out->len = g->len;
    out->fd = g->fd;
    out->file_dev = g->file_dev;
    out->file_ino = g->file_ino;
    out->slot = g->slot;
    memcpy(out->devmap, g->devmap, sizeof out->devmap);
}

struct held {
    int8_t sdev[GM_GROUP_MAX_DEVICES];   /* the old segment's index */
    unsigned char uuid[GM_GROUP_MAX_DEVICES][16];
    uint64_t physical[GM_GROUP_MAX_DEVICES];
    uint64_t charged[GM_GROUP_MAX_DEVICES];
    uint64_t total;
};

/* This member's devices and charges in its segment, read under its lock. */
static bool read_held(struct gm_group *g, struct held *h)
{
    memset(h, 0, sizeof *h);
    if (!gm_grpi_grp_lock(g))
        return false;
    const struct gm_group_seg *s = g->seg;
    for (int a = 0; a < GM_GROUP_MAX_DEVICES; a++) {
        int sd = g->devmap[a];
        h->sdev[a] = (int8_t)sd;
        if (sd < 0)
            continue;
        for (int k = 0; k < 16; k++)
            h->uuid[a][k] = LD(&s->dev[sd].uuid[k]);
        h->physical[a] = LD(&s->dev[sd].physical);
        h->charged[a] = LD(&s->slot[g->slot].charged[sd]);
        h->total = sat_add(h->total, h->charged[a]);
    }
    gm_grpi_seg_unlock(g->seg);
    return true;
}

/* Registers the devices in ng (its devmap as it goes, so that a reclaim
 * there names the caller's index) and charges them there (memory held:
 * no admission rule). -1 when a device or a charge could not be had. */
static int carry(struct gm_group *ng, const struct held *h, char *err,
                 size_t cap)
{
    for (int a = 0; a < GM_GROUP_MAX_DEVICES; a++) {
        if (h->sdev[a] < 0)
            continue;
        int nd = gm_grpi_device_in(ng, h->uuid[a], h->physical[a], err, cap);
        if (nd < 0)
            return -1;
        __atomic_store_n(&ng->devmap[a], (int8_t)nd, __ATOMIC_RELEASE);
        gm_grpi_charge_in(ng, nd, h->charged[a], 0);
        if (is_broken(ng)) {   /* the charge was not made */
            gm_msgf(err, cap, "the lock of %s does not respond", ng->path);
            return -1;
        }
        struct gm_group_dev *d = &ng->seg->dev[nd];
        gm_grpi_raise_peak(&d->peak, LD(&d->used));
    }
    return 0;
}

/* The move: 1 moved (*total: what it carried), 0 not now (the gate
 * stayed busy: the next pass), -1 not possible (err says why; g as it
 * was). The join, which may wait on the new file's creator or lock, is
 * made with the gate open (it touches ng alone); what this process holds
 * is read, carried and swapped in with the gate closed, so no call of
 * this process changes it meanwhile; the old file is left afterwards,
 * through a copy of g's binding (a failure there marks the copy, never
 * g, broken). */
static int move(struct gm_group *g, uint64_t *total, char *err, size_t cap)
{
    struct gm_group ng;
    if (join_again(g, &ng, err, cap) != 0)
        return -1;
    if (!gate_close(g, MOVE_GATE_WAIT_NS)) {
        gm_grpi_leave_seg(&ng, false);
        return 0;
    }
    struct held h;
    int rc = 1;
    if (!read_held(g, &h)) {
        gm_msgf(err, cap, "its own lock does not respond");
        rc = -1;
    } else if (carry(&ng, &h, err, cap) != 0) {
        rc = -1;
    }
    if (rc < 0) {
        gate_open(g);
        gm_grpi_leave_seg(&ng, false);
        return -1;
    }
    struct gm_group old;
    binding_of(g, &old);
    g->seg = ng.seg;
    g->len = ng.len;
    g->fd = ng.fd;
    g->file_dev = ng.file_dev;
    g->file_ino = ng.file_ino;
    g->slot = ng.slot;
    memcpy(g->devmap, ng.devmap, sizeof g->devmap);
    __atomic_fetch_add(&g->moves, 1u, __ATOMIC_RELAXED);
    gate_open(g);
    gm_grpi_leave_seg(&old, true);
    *total = h.total;
    return 1;
}

#define RETRY_FIRST_NS 1000000000ull   /* after a failed move: 1 s, ... */
#define RETRY_MOST_NS 64000000000ull   /* ... doubling up to 64 s */

void gm_grpi_rehome(struct gm_group *g)
{
    /* g's binding is written by this thread alone (the reaper's move):
     * read here outside the gate. */
    if (!g->use_on || !joined(g) || is_broken(g) || !file_moved(g))
        return;
    uint64_t now = gm_clock_monotonic_ns();
    if (now < g->move_after_ns)
        return;
    char why[256] = "", line[GM_PATH_MAX + GM_NAME_MAX + 256 + 512];
    uint64_t total = 0;
    int rc = move(g, &total, why, sizeof why);
    if (rc > 0) {
        char sz[32];
        gm_format_size(total, sz, sizeof sz);
        snprintf(line, sizeof line, "group '%s': its file was removed or "
                 "replaced while in use; this process moved to %s, the "
                 "file there now, with the %s it holds (the group may be "
                 "over its limit until members free memory)", g->name,
                 g->path, sz);
        g->move_wait_ns = 0;
        g->move_after_ns = 0;
    } else if (rc < 0) {
        snprintf(line, sizeof line, "group '%s': its file was removed or "
                 "replaced while in use, and joining %s failed (%s); this "
                 "process keeps the old one, which new members do not see "
                 "(tried again, less often after each failure, at least "
                 "once a minute)", g->name, g->path, why);
        g->move_wait_ns = g->move_wait_ns == 0 ? RETRY_FIRST_NS
                        : g->move_wait_ns >= RETRY_MOST_NS / 2
                        ? RETRY_MOST_NS : 2 * g->move_wait_ns;
        g->move_after_ns = now + g->move_wait_ns;
    }
    bool say = rc > 0 || (rc < 0 && !g->move_failed);
    if (rc != 0)
        g->move_failed = rc < 0;
    if (say && g->on_note != NULL)
        g->on_note(g->arg, line);
}
