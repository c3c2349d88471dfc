/*
 * tools/lib/reader.h — the reader library of the telemetry segments, used by
 * `gpumem` and `gpumem-top`: list the segments of a prefix, map one
 * read-only, validate it before trusting anything, take consistent stats
 * snapshots, drain events with exact loss counts, tell live writers from
 * dead ones. Layout: shim/telemetry/abi.h, docs/abi.md.
 *
 * Guarantees: no function crashes or loops without bound on a truncated,
 * hostile or concurrently modified segment. Geometry (device slots, ring
 * capacity, offsets) is validated once at open and kept in struct gm_seg;
 * the mapping's copy is never re-read for addressing. Loops are bounded by
 * the validated capacity and the caller's buffer. A segment file truncated
 * after it was mapped makes the next access fault with SIGBUS; the library
 * installs a SIGBUS handler at the first gm_seg_open of a file (chaining to
 * any previous handler for faults that are not its own) and turns the
 * fault into an error return. The program never waits on a writer, and a
 * writer never waits on a reader.
 *
 * Not thread-safe per struct gm_seg / struct gm_cursor (one thread each);
 * separate segments may be read from separate threads.
 */
#ifndef GM_READER_H
#define GM_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shim/telemetry/abi.h"
#include "shim/telemetry/ident.h"     /* gm_ident_job, gm_ident_match */
#include "shim/telemetry/hist.h"
#include "shim/telemetry/report.h"     /* gm_hist_quantile, gm_report_text/json */
#include "shim/telemetry/telemetry.h"  /* struct gm_snapshot, enum gm_snap_state */

#define GM_READER_DEFAULT_DIR "/dev/shm"

/* The pids of the segments "<prefix>.<pid>" in dir (group segments
 * "<prefix>.group@*" and any other name are skipped), ascending, at most
 * max of them stored. Returns how many exist (may exceed max), or -1 when
 * dir cannot be read (errno set). Does not open the files. */
int gm_reader_list(const char *dir, const char *prefix, int *pids,
                   size_t max);

/* A segment's name: "<prefix>.<pid>" (pidns 0: its writer ran in the
 * initial pid namespace, or could not tell) or "<prefix>.<pid>.ns<pidns>"
 * (pid as seen in the writer's pid namespace, whose inode is pidns). */
struct gm_seg_id {
    int pid;
    uint64_t pidns;
};

/* Every segment of a prefix in dir, both name forms, ordered by pid then
 * pidns, at most max stored: the lowest max of them, whatever order the
 * directory lists them in. Returns how many exist (may exceed max), or
 * -1 when dir cannot be read (errno set). */
int gm_reader_list_ids(const char *dir, const char *prefix,
                       struct gm_seg_id *ids, size_t max);

/* The pid namespace of the calling process (inode; 0 unknown). */
uint64_t gm_reader_self_pidns(void);

/* An open, validated segment. Fields are read-only for callers. */
struct gm_seg {
    const unsigned char *base;   /* mapping (or caller memory) */
    size_t len;                  /* bytes mapped */
    int fd;                      /* -1 for memory images */
    bool mapped;                 /* base is ours to munmap */
    uid_t uid;                   /* file owner (the writer's uid) */
    uint32_t pid;                /* header pid (== the name's for files:
                                    gm_seg_open refuses others) */
    uint64_t start_ticks;
    uint32_t dev_slots;          /* validated geometry */
    uint32_t ring_capacity;
    uint64_t dev_offset, ring_offset, total_size;
    uint64_t name_ns;            /* pidns from the file name (0: none) */
    dev_t st_dev;                /* the file, for its lock in /proc/locks */
    ino_t st_ino;
    uint64_t hist_offset;        /* history region (marks first) */
    uint32_t hist_slots;         /* devices with a history */
    char path[512];
    /* Files: the header as read and validated at open (the mapping of
     * the whole segment is made only to read events). */
    _Alignas(64) unsigned char head[sizeof(struct gm_abi_header) +
                                    2 * sizeof(struct gm_abi_dev)];
    size_t head_len;             /* bytes of head read (0: none) */
};

/* Open "<dir>/<prefix>.<pid>" read-only (O_NOFOLLOW: a symbolic link is
 * refused), map it PROT_READ and validate it. A file whose header is not
 * its name's process (another pid, or for a ".ns<inode>" name another pid
 * namespace; for a plain name one that is neither the initial one nor
 * unknown) is refused too: a copy, or another process's segment under a
 * name it does not own. Returns 0, or -1 with a one-line reason in err
 * that starts with the path (e.g. "<path>: bad magic: not a gpumem
 * segment", "<path>: ABI version 2; this tool reads version 1", "<path>:
 * the header's pid 7 is not the name's pid 8 (...)"). On error nothing
 * stays open. */
int gm_seg_open(struct gm_seg *s, const char *dir, const char *prefix,
                int pid, char *err, size_t errcap);
int gm_seg_open_id(struct gm_seg *s, const char *dir, const char *prefix,
                   const struct gm_seg_id *id, char *err, size_t errcap);
/* The segment of the process that has `pid` in the caller's pid
 * namespace: "<prefix>.<inner>.ns<inode>" when that process runs in
 * another pid namespace (inode and inner pid from /proc/<pid>), else
 * "<prefix>.<pid>". */
int gm_seg_open_pid(struct gm_seg *s, const char *dir, const char *prefix,
                    int pid, char *err, size_t errcap);
/* Any path; a name ending in ".ns<digits>" sets name_ns, and one ending
 * in ".<pid>" or ".<pid>.ns<digits>" is checked against the header as
 * above (another name: not checked). */
int gm_seg_open_path(struct gm_seg *s, const char *path, char *err,
                     size_t errcap);
/* Validate and use n bytes at p (not copied: p must stay valid and be
 * 64-byte aligned, else -1). uid is getuid(), fd -1. */
int gm_seg_open_mem(struct gm_seg *s, const void *p, size_t n, char *err,
                    size_t errcap);
void gm_seg_close(struct gm_seg *s);

/* Check an image without opening anything: 0 valid, -1 (reason in err). */
int gm_seg_validate(const void *p, size_t n, char *err, size_t errcap);

/* Consistent copy of the header and of every device seen (seqlock, at
 * most 64 attempts each; see enum gm_snap_state for devices that could
 * not be read consistently or fail the writer's invariants). Returns the
 * number of such devices, or -1 when the segment faulted (truncated). */
int gm_seg_snapshot(const struct gm_seg *s, struct gm_snapshot *out);

/* Whether the segment's writer runs (ran) in the caller's pid namespace,
 * so that its pid means the same here. */
bool gm_seg_local(const struct gm_seg *s);

/* The flock(LOCK_EX) holders of /proc/locks, read once for many segments:
 * the liveness lock every writer holds tells a reader in an outer pid
 * namespace the writer's pid as seen there (the kernel translates it into
 * the namespace of the /proc that is read). Bounded: at most
 * GM_LOCKS_MAX entries from at most 8 MiB of text. */
#define GM_LOCKS_MAX 65536u
struct gm_lock_ent {
    unsigned maj, min;           /* device of the file */
    unsigned long long ino;      /* its inode */
    int pid;                     /* holder as seen by the reader; 0: none */
};
struct gm_locks {
    struct gm_lock_ent *e;
    size_t n, cap;
};
/* Read path (NULL: /proc/locks) into lm (initialised here). Returns 0,
 * or -1 (lm empty, errno). gm_locks_parse appends to an lm that is zero
 * or loaded. */
int gm_locks_load(struct gm_locks *lm, const char *path);
/* Parse n bytes of /proc/locks text (for tests). Returns entries kept. */
size_t gm_locks_parse(struct gm_locks *lm, const char *text, size_t n);
void gm_locks_free(struct gm_locks *lm);
/* The pid holding FLOCK WRITE on the file (dev, ino); 0 when none. */
int gm_locks_holder(const struct gm_locks *lm, dev_t dev, ino_t ino);

/* The writer's pid in the caller's pid namespace: the header pid for a
 * local segment; for another namespace's, the holder of the segment's
 * lock (from lm, or /proc/locks read now when lm is NULL), confirmed by
 * /proc/<pid>/ns/pid and the last NSpid of /proc/<pid>/status. 0 when
 * not known (the writer is gone, or not visible from here). */
int gm_seg_host_pid(const struct gm_seg *s, const struct gm_locks *lm);

enum gm_seg_state {
    GM_SEG_ALIVE = 0,  /* the writer runs (pid and start time match, or
                          its lock is held: another pid namespace) */
    GM_SEG_EXITED,     /* gone after closing the segment (kept) */
    GM_SEG_DEAD,       /* gone without closing it (killed, crashed) */
};
/* Liveness: for a local segment kill(pid, 0) and /proc/<pid>/stat start
 * time against the header; for every segment, failing that, whether the
 * writer's flock is still held (the only test for another pid namespace,
 * where the header's pid names some other process). */
enum gm_seg_state gm_seg_state(const struct gm_seg *s);
const char *gm_seg_state_name(enum gm_seg_state st); /* "alive", ... */

/* Event cursor: the next event index to read. */
struct gm_cursor {
    uint64_t next;
    uint64_t stall_idx;          /* index the reader waits on, if any */
    uint64_t stall_since_ns;     /* CLOCK_MONOTONIC when it started */
};
/* Start at the oldest event (index 0: the first drain reports how many
 * were overwritten before it as lost) or, with only_new, at the head. */
void gm_cursor_init(struct gm_cursor *c, const struct gm_seg *s,
                    bool only_new);

/* How long the reader waits on an event that was claimed but is not
 * published (a producer between its claim and its publish, or a record a
 * producer dropped) before counting it lost and moving on. */
#define GM_READER_STALL_NS 500000000ull
#define GM_DRAIN_FLUSH 1u   /* do not wait: count unpublished events lost
                               at once (writer dead, or a one-shot read) */

/* Copy up to max events from the cursor on, in index order, each whole and
 * consistent (never a torn or duplicated record). *lost (if non-NULL) is
 * set to the number of events skipped during this call: overwritten
 * before they could be read, or unpublished past the stall time. Every
 * event index the cursor passes is either returned or counted lost,
 * exactly once. Returns the number copied, or 0 with *lost = 0 on a
 * fault. Bounded: at most ring_capacity slots are examined per call. */
size_t gm_seg_drain(const struct gm_seg *s, struct gm_cursor *c,
                    struct gm_abi_record *out, size_t max, unsigned flags,
                    uint64_t *lost);

/* The writer's job identity (recorded once, before the segment was
 * published), cleaned by gm_ident_copy: every string NUL-terminated and
 * of safe bytes only. Also in every snapshot (struct gm_snapshot.ident).
 * Returns 0, or -1 when s holds no header copy or mapping. */
int gm_seg_ident(const struct gm_seg *s, struct gm_abi_ident *out);

/* Everything a process row needs. */
struct gm_proc {
    int pid;                     /* the header's: in the writer's pid ns */
    int host_pid;                /* in the reader's pid ns: pid when local,
                                    else the lock holder; 0: not known */
    uint64_t pidns;              /* the name's pid namespace (0: none) */
    bool local;                  /* gm_seg_local */
    uid_t uid;
    enum gm_seg_state state;
    int busy;                    /* gm_seg_snapshot's result */
    struct gm_snapshot snap;
};
/* Snapshot + owner + liveness + host pid (lm as for gm_seg_host_pid).
 * Returns gm_seg_snapshot's result. */
int gm_seg_summary(const struct gm_seg *s, struct gm_proc *out);
int gm_seg_summary_with(const struct gm_seg *s, const struct gm_locks *lm,
                        struct gm_proc *out);

/* ---- history (docs/abi.md "History") ---------------------------------- */

/* Device dev's whole curve: the three tiers stitched in time order (tier
 * 2 where tier 1 has forgotten, tier 1 where tier 0 has, tier 0 for the
 * last 512 s) and the open bucket last. Buckets without an event are
 * absent (used held at the previous point's used_last). Returns the
 * number of points (at most max; GM_HIST_POINTS_MAX always suffices), 0
 * when the device has no history yet or dev >= hist_slots, -1 on a fault
 * (reason in err). A torn or busy bucket is retried a bounded number of
 * times, then left out. */
int gm_seg_history(const struct gm_seg *s, unsigned dev,
                   struct gm_hist_point *out, size_t max, char *err,
                   size_t errcap);

/* A mark with its label. */
struct gm_mark_info {
    uint64_t number;             /* 0, 1, ... in call order */
    uint64_t ts_ns;
    uint64_t step;
    char label[GM_ABI_MARK_LABEL];
};
/* The marks whose labels the table still holds (at most the last 128),
 * oldest first. Returns the count (≤ max) or -1 on a fault. */
int gm_seg_marks(const struct gm_seg *s, struct gm_mark_info *out,
                 size_t max, char *err, size_t errcap);
/* The header's step count (gpumem_step calls). */
uint64_t gm_seg_steps(const struct gm_seg *s);

/* Device dev's OOM snapshot: 1 and *out when one is complete, 0 when the
 * device has none (no refusal, or dev >= hist_slots), -1 on a fault. */
int gm_seg_oom(const struct gm_seg *s, unsigned dev, struct gm_abi_oom *out,
               char *err, size_t errcap);

/* Names for tools: gm_ev_kind_text and gm_api_text (shim/telemetry/abi.h):
 * "alloc", "free", "oom", ... and "cuMemAlloc", ...; an unknown value by
 * number ("kind19", "api40"). */

/* The fuzzing and hostile-input entry point: treat n bytes at p (any
 * alignment) as a segment image; validate it, and when valid snapshot it,
 * drain every event and format both reports. Returns 0 when the image was
 * accepted, -1 when it was refused. Never crashes, never loops. */
int gm_reader_check_bytes(const void *p, size_t n);

#endif
