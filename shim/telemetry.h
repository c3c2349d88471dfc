/*
 * shim/telemetry.h — the writer side of the per-process telemetry segment
 * (layout in shim/abi.h, documented in docs/abi.md).
 *
 * The hooks call one function per semantic action; each updates the
 * device's seqlocked stats block and appends one 64-byte record to the event
 * ring. None of them blocks on a reader, allocates with malloc, or makes a
 * driver call. When no shared segment could be created, gm_tel_open() falls
 * back to private anonymous memory of the same layout, so the exit report
 * still works; only other processes cannot see it.
 *
 * Thread safety: every function may be called concurrently from any thread.
 * Concurrent writers to one device's stats serialise on a per-device writer
 * spinlock held for a few dozen instructions (never across a driver call);
 * ring producers never lock.
 */
#ifndef GM_TELEMETRY_H
#define GM_TELEMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim/abi.h"

struct gm_tel_params {
    const char *prefix;          /* GPUMEM_SHM_PREFIX */
    uint32_t ring_events;        /* power of two */
    const char *policy_summary;  /* gm_policy_summary() text */
    uint32_t mode;               /* enum gm_mode */
    uint32_t on_oom;             /* enum gm_on_oom */
    const char *shm_dir;         /* NULL = "/dev/shm" (tests may override) */
};

struct gm_tel {
    struct gm_abi_header *hdr;   /* NULL until opened */
    size_t map_len;
    bool shared;                 /* false: private fallback memory */
    char path[256];              /* segment path when shared */
};

/* Open (create) this process's segment. Returns 0 on success with a shared
 * segment, 1 when it fell back to private memory (a reason is written to
 * err), -1 when even that failed (t->hdr stays NULL, every call no-ops). */
int gm_tel_open(struct gm_tel *t, const struct gm_tel_params *p,
                char *err, size_t errcap);
/* Unmap; unlink the segment unless keep. */
void gm_tel_close(struct gm_tel *t, bool keep);
/* After fork in the child: forget the parent's segment without unmapping
 * or unlinking anything the parent owns. */
void gm_tel_forget(struct gm_tel *t);

/* Device appeared: physical total, limit (0 = none). */
void gm_tel_device(struct gm_tel *t, unsigned dev, uint64_t physical,
                   uint64_t limit);
void gm_tel_alloc(struct gm_tel *t, unsigned dev, unsigned api, uint64_t addr,
                  uint64_t size, uint64_t lat_ns, uint64_t used_after,
                  uint64_t peak);
void gm_tel_free(struct gm_tel *t, unsigned dev, unsigned api, uint64_t addr,
                 uint64_t size, uint64_t lat_ns, uint64_t used_after);
void gm_tel_refuse(struct gm_tel *t, unsigned dev, unsigned api,
                   uint64_t size, uint64_t used, uint64_t limit);
void gm_tel_context(struct gm_tel *t, unsigned dev, uint64_t bytes,
                    uint64_t used_after, uint64_t peak);
void gm_tel_limit(struct gm_tel *t, unsigned dev, uint64_t new_limit);
void gm_tel_frag(struct gm_tel *t, unsigned dev, uint32_t frag_ppm);
/* Pinned host memory: delta may be negative. */
void gm_tel_host(struct gm_tel *t, unsigned api, uint64_t addr, int64_t delta);
/* Generic event (spill, over-limit, wait, trim, mode change, ...). */
void gm_tel_event(struct gm_tel *t, unsigned kind, unsigned dev, unsigned api,
                  uint64_t size, uint64_t addr, uint64_t used_after);

#endif
