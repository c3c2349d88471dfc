/*
 * shim/telemetry/telemetry.h — the writer side of the per-process telemetry segment
 * (layout in shim/telemetry/abi.h, documented in docs/abi.md), plus the read
 * primitives that the exit report and tools/lib/reader.c share with it.
 *
 * The hooks call one function per semantic action; each updates the
 * device's seqlocked stats block and appends one 64-byte record to the event
 * ring. None of them blocks on a reader, allocates with malloc, or makes a
 * driver call. When no shared segment could be created, gm_tel_open() falls
 * back to private anonymous memory of the same layout, so the exit report
 * still works; only other processes cannot see it.
 *
 * Thread safety: every function may be called concurrently from any
 * thread. The process's writers take turns under one spinlock (t->wlock,
 * held for a few dozen instructions, never across a syscall on the hot
 * path), so each update is a plain store; the device blocks and ring
 * records are seqlocked for readers in other processes (shim/telemetry/
 * abi.h), who never block a writer: only they retry. Every function is a
 * no-op while the segment is closed (t->wlock 0, t->hdr NULL), and for a
 * device ordinal >= the segment's device slots the stats are skipped (the
 * ring record is still written).
 * The lock knows its holder: a writer called by a signal handler that
 * interrupted a writer of the same thread skips its update instead of
 * waiting for itself; a holder that died is replaced (its device blocks
 * and ring slot repaired); a holder alive but stuck for
 * GM_TEL_LOCK_WAIT_NS is given up on, with one warning, and the events
 * its waiters could not record are lost to telemetry (never to the
 * limits, which do not use this lock).
 */
#ifndef GM_TELEMETRY_H
#define GM_TELEMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim/base/spin.h"
#include "shim/telemetry/abi.h"
#include "shim/telemetry/fragq.h"

struct gm_tel_params {
    const char *prefix;          /* GPUMEM_SHM_PREFIX; NULL/"" = "gpumem" */
    uint32_t ring_events;        /* power of two; 0 = GM_ABI_RING_DEFAULT;
                                    rounded up and clamped to
                                    [GM_ABI_RING_MIN, GM_ABI_RING_MAX] */
    const char *policy_summary;  /* gm_policy_summary() text (truncated) */
    uint32_t mode;               /* enum gm_mode */
    uint32_t on_oom;             /* enum gm_on_oom */
    const char *shm_dir;         /* GPUMEM_SHM_DIR; NULL = "/dev/shm"; must
                                    pass gm_shm_dir_check, else private */
    uint32_t dev_slots;          /* device blocks; 0 = GM_ABI_MAX_DEVICES */
    const struct gm_abi_ident *ident; /* job identity; NULL: none recorded */
    uint64_t warn_before_ns;     /* forecast warning threshold; 0 = none */
    bool forecast_silent;        /* the forecast's record without its line */
};

/* The segment as this process laid it out (set by attach before hdr is
 * published, fixed after): where the writer's device blocks, ring and
 * history lie. Every address the writer computes comes from here, never
 * from the header's layout fields (dev_slots, ring_offset, ...), which
 * any process of our uid can overwrite in the shared file. */
struct gm_tw {
    struct gm_abi_header *h;     /* the segment */
    struct gm_abi_dev *devs;     /* dev_slots device blocks */
    struct gm_abi_record *ring;  /* ring_mask + 1 records */
    struct gm_abi_mark *marks;   /* GM_ABI_MARKS labels */
    struct gm_abi_hist *hists;   /* hist_slots histories */
    uint64_t ring_mask;
    uint32_t dev_slots;
    uint32_t hist_slots;
};

struct gm_tel {
    struct gm_abi_header *hdr;   /* NULL until opened */
    struct gm_tw w;              /* its layout, for the writer */
    gm_spin wlock;               /* the writer lock and the segment's
                                    state: 0 closed, TW_W_OPEN free,
                                    TW_W_OPEN | flags | holder's thread
                                    id held (shim/telemetry/telwrite.h) */
    bool quiet;                  /* warnings muted (forecast_silent) */
    size_t map_len;
    bool shared;                 /* false: private fallback memory */
    char path[256];              /* segment path when shared */
    int fd;                      /* shared: open, holds flock(LOCK_EX) */
    uint64_t file_dev, file_ino; /* fd's file at open: a number the
                                    program closed and reused names
                                    another file, never closed by us */
};

/* Open (create) this process's segment `<shm_dir>/<prefix>.<pid>` (with
 * ".ns<inode>" appended outside the initial pid namespace, from
 * ident->pidns) in a directory that passes gm_shm_dir_check:
 * open(O_CREAT|O_EXCL|O_NOFOLLOW, 0600), flock(LOCK_EX) held for the life
 * of the segment (a reader's or a successor's liveness test),
 * posix_fallocate (a full tmpfs fails here, not later as SIGBUS), mmap.
 * A file already at the path is replaced only when it is a regular file of
 * our uid, too short for a magic or with the telemetry magic (or a magic
 * still 0), that no
 * live process holds locked (a leftover of a dead process with our pid, or
 * of this process's image before exec); a symbolic link, a file of another
 * kind (a group segment) or anything else is refused and left untouched.
 * Returns 0 on success with a shared segment, 1 when it fell back to
 * private memory (a reason is written to err), -1 when even that failed
 * (t->hdr stays NULL, every call no-ops). Nothing is printed. */
int gm_tel_open(struct gm_tel *t, const struct gm_tel_params *p,
                char *err, size_t errcap);
/* Mark the segment closed (flags, closed_ns), unlink it unless keep (then
 * GM_ABI_F_KEPT is set too), release its lock, and set t->hdr to NULL so
 * later calls no-op. The mapping itself is left in place: a thread still
 * inside a gm_tel_* call at exit keeps writing into valid memory. */
void gm_tel_close(struct gm_tel *t, bool keep);
/* After fork in the child: forget the parent's segment without unlinking
 * or unlocking anything the parent owns: closes the child's copy of the
 * descriptor and unmaps the child's copy of the mapping (both would keep
 * the parent's lock alive after the parent dies), resets the cached
 * thread id. Call only while no other thread of the child can be inside a
 * gm_tel_* call (the atfork child handler). */
void gm_tel_forget(struct gm_tel *t);

/* Bytes a segment with this geometry occupies (after the same rounding
 * and clamping gm_tel_open applies). */
size_t gm_tel_layout_size(uint32_t ring_events, uint32_t dev_slots);
/* Lay a fresh segment out in caller memory (at least gm_tel_layout_size
 * bytes, 64-byte aligned) and attach t to it (t->shared false; close never
 * frees it). For tests, benchmarks and the fuzz harness. Returns 0, or -1
 * when len is too small or mem misaligned. */
int gm_tel_open_mem(struct gm_tel *t, void *mem, size_t len,
                    const struct gm_tel_params *p);

/* Device appeared: physical total, limit (0 = none). No ring record. */
void gm_tel_device(struct gm_tel *t, unsigned dev, uint64_t physical,
                   uint64_t limit, const unsigned char *uuid);
/* Allocation charged: allocs, total/live counts, size and latency
 * histograms, used = used_after, peak = max(peak, peak arg, used). Record
 * GM_EV_ALLOC {size, addr, lat_ns, used_after}. */
void gm_tel_alloc(struct gm_tel *t, unsigned dev, unsigned api, uint64_t addr,
                  uint64_t size, uint64_t lat_ns, uint64_t used_after,
                  uint64_t peak);
/* Allocation released: frees++, live counts down (clamped at 0), used =
 * used_after. Record GM_EV_FREE {size, addr, lat_ns, used_after}. With
 * api GM_API_CTX_END (freed by its context's end) only used and the
 * fragmentation change, and no record: the caller's gm_tel_ctx_freed
 * takes all of them out of the live figures at once. */
void gm_tel_free(struct gm_tel *t, unsigned dev, unsigned api, uint64_t addr,
                 uint64_t size, uint64_t lat_ns, uint64_t used_after);
/* The same two, also setting the fragmentation figure in the same stats
 * update (one seqlock section instead of two); GM_TEL_FRAG_KEEP (the
 * fragmentation log's "no new figure") leaves it unchanged. */
#define GM_TEL_FRAG_KEEP GM_FRAGQ_KEEP
void gm_tel_alloc_frag(struct gm_tel *t, unsigned dev, unsigned api,
                       uint64_t addr, uint64_t size, uint64_t lat_ns,
                       uint64_t used_after, uint64_t peak, uint32_t frag_ppm);
void gm_tel_free_frag(struct gm_tel *t, unsigned dev, unsigned api,
                      uint64_t addr, uint64_t size, uint64_t lat_ns,
                      uint64_t used_after, uint32_t frag_ppm);
/* Request refused: refusals++, used = used, peak raised to `peak` (the
 * accounting's own: a pool growth undone before the refusal raised it
 * with no event of its own; 0 when none). Record GM_EV_OOM {size,
 * used_after = used, extra = limit}. */
void gm_tel_refuse(struct gm_tel *t, unsigned dev, unsigned api,
                   uint64_t size, uint64_t used, uint64_t limit,
                   uint64_t peak);
/* The hot path's form of the two above: one prepared event, time-stamp
 * and latency already in nanoseconds. */
struct gm_tel_ev {
    uint64_t ts_ns;         /* CLOCK_REALTIME of the event */
    uint64_t lat_ns;        /* time in the driver call */
    uint64_t addr, size;
    uint64_t used;          /* device used after the event */
    uint64_t peak;          /* alloc: device peak (0 = use used) */
    uint32_t dev, api;
    uint32_t frag_ppm;      /* GM_TEL_FRAG_KEEP: leave the figure */
    uint32_t mark;          /* free: the mark its add returned */
    struct gm_fragq *fq;    /* the device's fragmentation log (device
                               pointers only, else NULL): the event logs
                               its interval there, under the writer lock */
    bool known;             /* the device's block is already marked present
                               (gm_tel_device ran for it) */
    bool ended;             /* free: by its context's end, not the program
                               (not a free: no record, live figures left
                               to the caller's gm_tel_ctx_freed) */
};
/* gm_tel_alloc_ev(t, e) (returning the mark of its interval's add, 0
 * when none was logged) and gm_tel_free_ev(t, e) are inline in
 * shim/telemetry/telwrite.h. */
/* Context memory measured: context_bytes += bytes (context_peak follows
 * it up), used, peak. Record
 * GM_EV_CONTEXT {size = bytes, used_after}. */
void gm_tel_context(struct gm_tel *t, unsigned dev, uint64_t bytes,
                    uint64_t used_after, uint64_t peak);
/* Limit changed. Record GM_EV_LIMIT {size = new, extra = old limit,
 * used_after = used}. */
void gm_tel_limit(struct gm_tel *t, unsigned dev, uint64_t new_limit);
/* Fragmentation now (ppm, clamped to 1e6); also frag at peak while used ==
 * peak. No ring record. */
void gm_tel_frag(struct gm_tel *t, unsigned dev, uint32_t frag_ppm);
/* Under the writer lock: apply device dev's fragmentation log q and
 * publish its figure when it changed (a sync point: the exit, gm_tel's
 * periodic points). */
void gm_tel_frag_sync(struct gm_tel *t, unsigned dev, struct gm_fragq *q);
/* The same, then q's largest free gap and figure; false, nothing set,
 * when q holds no interval or the lock could not be had (the OOM
 * snapshot). */
bool gm_tel_frag_peek(struct gm_tel *t, unsigned dev, struct gm_fragq *q,
                      uint64_t *largest, uint32_t *ppm);
/* Pinned host memory: delta may be negative. The process-wide total
 * (header host_pinned) is clamped at 0. Record GM_EV_HOST {dev =
 * GM_ABI_NO_DEVICE, size = |delta|, addr = delta as int64, used_after =
 * total after, extra = the host address}. */
void gm_tel_host(struct gm_tel *t, unsigned api, uint64_t addr, int64_t delta);
/* Generic event (spill, over-limit, wait, trim, mode change, ...): one
 * record {size, addr, used_after}; stats: SPILL spills++ and spilled_bytes
 * += size; OVER_LIMIT over_limit++; WAIT_BEGIN waits++; TRIM trims++ and
 * trimmed_bytes += size; RECLAIM reclaims++ and reclaimed_bytes += size;
 * CONTEXT_END (a charged context ended) context_bytes -= size, clamped at
 * 0; any kind with a device in range also sets used = used_after. */
/* A context's end freed `count` allocations of `bytes` in all that the
 * program had not freed (after their gm_tel_free with GM_API_CTX_END, or
 * with none: the static arena's pieces): live_allocs -= count, live_bytes
 * -= bytes (clamped at 0), ended_bytes += bytes, used = used_after.
 * Record GM_EV_CTX_FREED {size = bytes, addr = count, used_after, extra =
 * the CLOCK_REALTIME ns when the first of them was given back}. */
void gm_tel_ctx_freed(struct gm_tel *t, unsigned dev, uint64_t bytes,
                      uint64_t count, uint64_t used_after, uint64_t began_ns);
void gm_tel_event(struct gm_tel *t, unsigned kind, unsigned dev, unsigned api,
                  uint64_t size, uint64_t addr, uint64_t used_after);
/* Bytes the device's stream-ordered pools hold (absolute), with the used
 * and peak the accounting had after that change (a pool grows or shrinks
 * at a synchronisation or a trim too, with no event after it). No
 * record. */
void gm_tel_pool(struct gm_tel *t, unsigned dev, uint64_t reserve_bytes,
                 uint64_t used, uint64_t peak);
/* Refresh used and peak without a record (e.g. before the exit report:
 * concurrent hooks may publish their used_after out of order). */
void gm_tel_sync(struct gm_tel *t, unsigned dev, uint64_t used,
                 uint64_t peak);

/* ---- read side -------------------------------------------------------- */

/* State of one device in a snapshot. */
enum gm_snap_state {
    GM_SNAP_OK = 0,     /* consistent copy */
    GM_SNAP_BUSY,       /* seqlock never stable within the retry bound
                           (writer busy, or killed mid-update): the values
                           are the last attempt and may be torn */
    GM_SNAP_INSANE,     /* consistent but breaks a writer invariant
                           (docs/abi.md): not written by a gpumem writer */
};

/* A copy of everything a report or a tool shows. */
struct gm_snapshot {
    uint32_t pid, mode, on_oom, flags;
    uint64_t start_ticks, start_realtime_ns, created_ns, closed_ns;
    uint64_t taken_ns;           /* CLOCK_REALTIME when copied */
    uint64_t host_pinned;
    uint64_t ring_capacity, ring_head, ring_dropped;
    uint32_t dev_slots;          /* device blocks in the segment */
    uint32_t dev_count;          /* entries copied: min(dev_seen, slots) */
    uint8_t dev_state[GM_ABI_MAX_DEVICES];  /* enum gm_snap_state */
    char cmdline[GM_ABI_CMDLINE_LEN];       /* NUL-terminated */
    char policy[GM_ABI_POLICY_LEN];         /* NUL-terminated */
    struct gm_abi_ident ident;   /* cleaned copy (gm_ident_copy) */
    uint64_t steps;              /* header: gpumem_step() calls */
    uint64_t marks;              /* header: gpumem_mark() calls */
    uint64_t hist_base_ns;       /* header: the history's bucket 0 */
    struct gm_abi_dev dev[GM_ABI_MAX_DEVICES]; /* seq/lock fields: copies */
    /* The OOM snapshots of the first devices (state GM_ABI_OOM_DONE when
     * copied, else zero): gm_tel_read_oom or the reader's file path. */
    struct gm_abi_oom oom[GM_ABI_HIST_DEVICES];
};

/* Snapshot of the writer's own segment (the exit report). Returns the
 * number of devices not GM_SNAP_OK, -1 when t has no segment. */
int gm_tel_snapshot(struct gm_tel *t, struct gm_snapshot *out);
/* Keep this process's writers out (the writer lock) while a reader of
 * this process copies the segment (the exit report): then no store of
 * theirs races with its loads. Returns whether the lock was taken: false
 * when this thread holds it already (exit() from a signal handler that
 * interrupted a writer) or its holder is stuck; the reader then copies
 * without it, and gm_tel_release_writers must not be called. */
bool gm_tel_hold_writers(struct gm_tel *t);
void gm_tel_release_writers(struct gm_tel *t);

/* Copy the header fields and the first min(dev_seen, slots) device blocks
 * of a segment whose geometry the caller trusts or has validated (`slots`
 * device blocks right after the header, `cap` ring records). Strings are
 * NUL-terminated in the copy. Returns the number of devices not GM_SNAP_OK. */
int gm_tel_read(const struct gm_abi_header *h, uint32_t slots, uint32_t cap,
                struct gm_snapshot *out);

/* Copy the complete OOM snapshots of the first min(dev_count, 16)
 * devices into out->oom (others zeroed), addressing the history region
 * from the trusted geometry (`slots`, `cap`), never from the header. */
void gm_tel_read_oom(const struct gm_abi_header *h, uint32_t slots,
                     uint32_t cap, struct gm_snapshot *out);

/* Seqlock copy of one device block: at most 64 attempts with a short
 * bounded backoff. Returns enum gm_snap_state (OK, BUSY or INSANE). */
int gm_tel_read_dev(const struct gm_abi_dev *src, struct gm_abi_dev *dst);

/* Copy ring slot `slot` as event number `index`. */
enum gm_rec_state {
    GM_REC_OK = 0,      /* *out is event `index`, consistent */
    GM_REC_PENDING,     /* not published yet (being written, or dropped) */
    GM_REC_GONE,        /* overwritten by a later event */
};
int gm_tel_read_record(const struct gm_abi_record *slot, uint64_t index,
                       struct gm_abi_record *out);

/* Events no longer held by the ring: records dropped by producers plus
 * those overwritten (head - capacity when positive). */
uint64_t gm_snapshot_events_lost(const struct gm_snapshot *s);

#endif
