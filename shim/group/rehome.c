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

/* Whether g's file is no longer the one at g->path. Never on a test that
 * could not be made (the descriptor is not ours any more). */
static bool file_moved(const struct gm_group *g)
{
    struct stat a, b;
    if (!gm_grpi_fd_ours(g) || fstat(g->fd, &a) != 0)
        return false;
    if (lstat(g->path, &b) != 0)
        return errno == ENOENT;
    return a.st_nlink == 0 || b.st_dev != a.st_dev || b.st_ino != a.st_ino;
}

/* A new member of the group at g's path, with g's identity. */
static int join_again(const struct gm_group *g, struct gm_group *ng,
                      char *err, size_t cap)
{
    memset(ng, 0, sizeof *ng);
    ng->fd = -1;
    ng->slot = -1;
    snprintf(ng->path, sizeof ng->path, "%s", g->path);
    snprintf(ng->name, sizeof ng->name, "%s", g->name);
    ng->pid = g->pid;
    ng->start_ticks = g->start_ticks;
    ng->weight = g->weight;
    ng->limit = g->limit;
    ng->keep = g->keep;
    ng->on_reclaim = g->on_reclaim;
    ng->arg = g->arg;
    memset(ng->devmap, 0xff, sizeof ng->devmap); /* -1: none yet */
    return gm_grpi_join_path(ng, err, cap);
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

/* Registers the devices in ng and charges them there (memory held: no
 * admission rule); the new map in map. */
static int carry(struct gm_group *ng, const struct held *h, int8_t *map,
                 char *err, size_t cap)
{
    for (int a = 0; a < GM_GROUP_MAX_DEVICES; a++) {
        map[a] = -1;
        if (h->sdev[a] < 0)
            continue;
        int nd = gm_grpi_device_in(ng, h->uuid[a], h->physical[a], err, cap);
        if (nd < 0)
            return -1;
        map[a] = (int8_t)nd;
        gm_grpi_charge_in(ng, nd, h->charged[a], 0);
        struct gm_group_dev *d = &ng->seg->dev[nd];
        gm_grpi_raise_peak(&d->peak, LD(&d->used));
    }
    return 0;
}

/* The move, the gate closed: 1 moved, 0 nothing to do, -1 not
 * possible (err says why; g unchanged). */
static int move_locked(struct gm_group *g, char *err, size_t cap)
{
    if (!joined(g) || is_broken(g) || !file_moved(g))
        return 0;
    struct held h;
    if (!read_held(g, &h)) {
        gm_msgf(err, cap, "its lock does not respond");
        return -1;
    }
    struct gm_group ng;
    if (join_again(g, &ng, err, cap) != 0)
        return -1;
    int8_t map[GM_GROUP_MAX_DEVICES];
    if (carry(&ng, &h, map, err, cap) != 0) {
        gm_grpi_leave_seg(&ng, false);
        return -1;
    }
    gm_grpi_leave_seg(g, true);
    g->seg = ng.seg;
    g->len = ng.len;
    g->fd = ng.fd;
    g->file_dev = ng.file_dev;
    g->file_ino = ng.file_ino;
    g->slot = ng.slot;
    memcpy(g->devmap, map, sizeof map);
    g->moves++;
    char sz[32];
    gm_format_size(h.total, sz, sizeof sz);
    gm_msgf(err, cap, "%s", sz);
    return 1;
}

void gm_grpi_rehome(struct gm_group *g)
{
    if (!g->use_on || !joined(g) || is_broken(g) || !file_moved(g))
        return;
    if (!gate_close(g, MOVE_GATE_WAIT_NS))
        return;
    char why[256] = "", line[GM_PATH_MAX + 512];
    int rc = move_locked(g, why, sizeof why);
    bool say = rc > 0 || (rc < 0 && !g->move_failed);
    if (rc > 0)
        snprintf(line, sizeof line, "group '%s': its file was removed or "
                 "replaced while in use; this process moved to %s, the "
                 "file there now, with the %s it holds (the group may be "
                 "over its limit until members free memory)", g->name,
                 g->path, why);
    else if (rc < 0)
        snprintf(line, sizeof line, "group '%s': its file was removed or "
                 "replaced while in use, and joining %s failed (%s); this "
                 "process keeps the old one, which new members do not see "
                 "(tried again every pass)", g->name, g->path, why);
    g->move_failed = rc < 0 || (rc == 0 && g->move_failed);
    gate_open(g);
    if (say && g->on_note != NULL)
        g->on_note(g->arg, line);
}
