/*
 * tools/lib/trace.h — reading allocation traces into memory: gpumem's
 * recordings (shim/record/recfmt.h, docs/trace.md) and the plain text
 * format "pid t_ns op size ptr_or_handle rc dt_ns" of other tools; and
 * whether the writer of a recording section still runs; and when a
 * paced replay issues each event.
 *
 * Invariants: events keep the file's order (per process: the writer's
 * seq order); every event belongs to exactly one process entry; a
 * malformed file is refused with a message naming the line or offset.
 */
#ifndef GM_TRACE_H
#define GM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim/record/recfmt.h"

struct gm_tev {
    uint64_t seq;       /* index within its process, from 1 */
    uint64_t t_ns;      /* recording: since the section's start; text:
                           the file's own (any origin) */
    uint64_t size, addr, aux, aux2;
    uint32_t rc, tid, dt_ns;
    uint16_t op;        /* enum gm_rec_op */
    uint8_t dev, flags;
};

struct gm_tproc {
    uint32_t pid, ppid;
    uint64_t start_ns;      /* CLOCK_REALTIME ns (0: unknown, text) */
    size_t first, count;    /* its events: ev[first .. first+count) */
    uint64_t lost;          /* records the writer could not store */
    uint64_t first_lost;    /* seq of the first of them */
    bool closed;            /* the writer closed its section */
};

struct gm_trace {
    struct gm_tev *ev;
    size_t n, cap;
    struct gm_tproc *proc;
    size_t nproc;
    bool text;              /* read from the text format */
};

/* Load `path` ("-" = stdin). 0, or -1 with a message in err. */
int gm_trace_load(const char *path, struct gm_trace *t, char *err,
                  size_t errcap);
void gm_trace_free(struct gm_trace *t);

/* "alloc", "free", ... ("?" when unknown). */
const char *gm_rec_op_name(unsigned op);
/* True for ops that make memory (alloc, pitch, managed, async, pool
 * alloc, create, array). */
bool gm_rec_op_allocates(unsigned op);

/* Device ordinals as recorded: 0 .. GM_TRACE_DEVICES - 1; 255 unknown. */
#define GM_TRACE_DEVICES 255u

/* The device of event e's memory: its recorded one, or for an event
 * recorded without one (255: a release, a map, no current context), the
 * device of the latest event before it that named one (*cur, 0 before
 * any; updated here). Called for each event of a process in order. */
unsigned gm_tev_device(const struct gm_tev *e, unsigned *cur);

/* The devices process p (NULL: every process) is replayed on: those of
 * the allocations a replay issues (served, or refused for memory) and of
 * the contexts it made; device 0 when none. Sets used[d] for each (the
 * rest false); returns the highest + 1. */
unsigned gm_trace_devices(const struct gm_trace *t, const struct gm_tproc *p,
                          bool used[GM_TRACE_DEVICES]);

/* The most process p held at once on one device by its successful
 * calls: allocations less what their frees, releases and destroys gave
 * back (a handle's retains and mappings keep it, as they keep the
 * driver's memory), each on the device it was allocated on; 0 on no
 * memory for the count. */
uint64_t gm_trace_peak(const struct gm_trace *t, const struct gm_tproc *p);

/* Whether the writer of a recording section, pid as its header has it,
 * which started the section at start_ns (CLOCK_REALTIME), still runs: a
 * live process (not a zombie) of the caller's effective user under that
 * pid, started no later than the section (to a second: the clock tick
 * and the clocks' offset), so never a later process given the same pid
 * nor another user's (a writer's directory is its user's own). */
bool gm_rec_writer_running(uint32_t pid, uint64_t start_ns);
/* Pacing (gpumem replay --pace): when each event is issued, in ns after
 * the replay's start. Times count from the first event of the processes
 * paced together (one, or all of the file: a recording's sections by
 * their start, a text trace's processes on the one clock of its t_ns,
 * which may be absolute), and a stretch longer than gap_ns in which none
 * of them has an event is shortened to gap_ns, so that no wait is longer
 * (memory does not change while no call is made). */
#define GM_PACE_GAP_NS (60ull * 1000000000ull)
struct gm_pace {
    uint64_t zero;      /* the first event's time */
    size_t n;           /* stretches shortened */
    uint64_t *end;      /* the time each ends at, ascending */
    uint64_t *cut;      /* ns taken out up to its end, it included */
};
/* Plan the pacing of process p alone, or (p NULL) of every process of
 * t. 0, or -1 without memory. */
int gm_pace_plan(const struct gm_trace *t, const struct gm_tproc *p,
                 uint64_t gap_ns, struct gm_pace *out);
/* Event e of process p: its time after the start. */
uint64_t gm_pace_at(const struct gm_pace *pl, const struct gm_trace *t,
                    const struct gm_tproc *p, const struct gm_tev *e);
void gm_pace_free(struct gm_pace *pl);

#endif
