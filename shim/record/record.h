/*
 * shim/record/record.h — the recording sink: with GPUMEM_RECORD=DIR every
 * driver call a wrapper accounts is appended to DIR/<pid>.<n>.gmr in the
 * format of shim/record/recfmt.h (docs/trace.md).
 *
 * Invariants: when not recording a call site costs one predictable branch
 * on gm_rec_on; records are written straight into a shared file mapping,
 * so they survive a crash, exec or kill of the process; a forked child
 * never writes into its parent's file (it opens its own at its first
 * record); a record that cannot be stored (file size limit, full disk) is
 * counted, and the count and the position of the first loss are in the
 * header and in a "lost" record where storing resumes.
 */
#ifndef GM_RECORD_H
#define GM_RECORD_H

#include <stdint.h>

#include "shim/base/compiler.h"
#include "shim/record/recfmt.h"

/* 1 while this process records (set once at initialisation, cleared by
 * gm_rec_close). Loaded relaxed: it orders nothing (the writer's state is
 * under its mutex); a stale value only skips or tries one record, and
 * gm_rec_put checks again under the mutex. */
extern int gm_rec_on __attribute__((visibility("hidden")));

/* Start recording into `dir` (a directory; "" = off). Returns 0, or -1
 * with a reason in err (recording stays off). */
int gm_rec_open(const char *dir, char *err, size_t errcap);

/* Finish the section (count, lost, CLOSED flag, exact length). */
void gm_rec_close(void);

/* In a forked child: forget the parent's file; the child's first record
 * opens its own. */
void gm_rec_fork_child(void);

/* Append one record (cold: only called when gm_rec_on). */
void gm_rec_put(unsigned op, unsigned flags, int dev, uint64_t size,
                uint64_t addr, uint64_t aux, uint64_t aux2, uint32_t rc);

#define GM_REC(op, flags, dev, size, addr, aux, aux2, rc)                  \
    do {                                                                  \
        if (GM_UNLIKELY(__atomic_load_n(&gm_rec_on, __ATOMIC_RELAXED)))  \
            gm_rec_put((op), (flags), (dev), (uint64_t)(size),            \
                       (uint64_t)(addr), (uint64_t)(aux),                 \
                       (uint64_t)(aux2), (uint32_t)(rc));                 \
    } while (0)

#endif
