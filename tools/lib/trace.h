/*
 * tools/lib/trace.h — reading allocation traces into memory: gpumem's
 * recordings (shim/record/recfmt.h, docs/trace.md) and the plain text
 * format "pid t_ns op size ptr_or_handle rc dt_ns" of other tools; and
 * whether the writer of a recording section still runs.
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
    uint64_t t_ns;      /* since the process's first event */
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

/* The most process p held at once by its successful calls: allocations
 * less what their frees, releases and destroys gave back (a handle's
 * retains and mappings keep it, as they keep the driver's memory); 0 on
 * no memory for the count. */
uint64_t gm_trace_peak(const struct gm_trace *t, const struct gm_tproc *p);

/* Whether the writer of a recording section, pid as its header has it,
 * which started the section at start_ns (CLOCK_REALTIME), still runs: a
 * live process (not a zombie) of the caller's effective user under that
 * pid, started no later than the section (to a second: the clock tick
 * and the clocks' offset), so never a later process given the same pid
 * nor another user's (a writer's directory is its user's own). */
bool gm_rec_writer_running(uint32_t pid, uint64_t start_ns);

#endif
